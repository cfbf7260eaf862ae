"""End to end: a burst counted by the speed layer, the minute's check, a real Celery worker,
and the spike email at a local SMTP server naming the referrer that drove it."""

from __future__ import annotations

import datetime as dt

import msgspec

from alerts.checks import check_rule
from alerts.models import AlertRule, Channel, Delivery, Episode
from footfall.demo import DemoTraffic
from footfall.models import Site
from historical.buckets import ms
from tests.integration.alerts.conftest import Mailbox, Worker
from tests.integration.alerts.test_checks import Stack, stack  # noqa: F401 - the fixture

SOURCE = "launch.example.org"


def test_a_burst_from_one_referrer_emails_the_spike_naming_it_once(
    site: Site,
    stack: Stack,  # noqa: F811 - the fixture imported above
    smtp: Mailbox,
    worker: Worker,
) -> None:
    rule = AlertRule.objects.create(site=site, name="Spikes", kind="spike", threshold=3.0, window_minutes=10)
    rule.full_clean()
    rule.channels.add(Channel.objects.create(site=site, name="ops", kind="email", email="ops@example.com"))
    now = dt.datetime.now(dt.UTC)
    minute = ms(now) // 60_000 * 60_000
    gen = DemoTraffic(site_id=site.site_id, seed=11)
    # Three hours of steady traffic, then 300 page views from one referrer in the recent window.
    steady = [gen.event(minute - 190 * 60_000 + i * 30_000) for i in range(380)]
    burst = [
        msgspec.structs.replace(gen.event(minute - 10 * 60_000 + i * 2_000), referrer=f"https://{SOURCE}/post",
                                ref_domain=SOURCE, ref_type="other", utm=None)
        for i in range(300)
    ]  # fmt: skip
    stack.store.apply([*steady, *burst], ms(now))

    assert check_rule(rule, stack.measurer(now), now).action == "opened"
    assert worker.wait_final() == ["SUCCESS"]
    later = now + dt.timedelta(minutes=1)
    assert check_rule(rule, stack.measurer(later), later).action == "kept"  # the same episode: no second email

    [message] = smtp.messages
    assert message["To"] == "ops@example.com"
    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    episode = Episode.objects.get(rule=rule)
    assert episode.details["top_referrers"][0]["value"] == SOURCE
    assert SOURCE in text
    assert SOURCE in html
    assert "Traffic spike" in message["Subject"] or "Spikes" in message["Subject"]
    assert [p.get_content_type() for p in message.walk()].count("image/png") == 1
    assert list(Delivery.objects.filter(episode=episode).values_list("event", "status", "attempts")) == [
        ("opened", Delivery.SENT, 1)
    ]
