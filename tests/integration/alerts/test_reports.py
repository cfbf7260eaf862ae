"""Scheduled reports against the real stack: figures read back from rollups loaded into the
Mongo-wire server and compared with the REST API's answers for the same days, emails sent to
a local SMTP server (aiosmtpd) by the Celery task, and the signed unsubscribe link."""

from __future__ import annotations

import datetime as dt
import email
import email.policy
import random
import threading
from collections.abc import Iterator
from email.message import EmailMessage
from urllib.parse import urlsplit

import pytest
from aiosmtpd.controller import Controller
from django.core.management import CommandError, call_command
from django.test import Client

from alerts.models import Delivery, ReportSubscription
from alerts.periods import parse_period
from alerts.report_delivery import render_report
from alerts.tasks import send_reports
from footfall.models import Goal
from historical.store import ROLLUP_COLLECTIONS, RUNS, DayDocuments, connect, load_day
from tests.integration.api.conftest import SiteKey, make_site
from tests.ports import free_port

pytestmark = pytest.mark.django_db

TZ = "Europe/Berlin"
PAGES = [f"/docs/{n}" for n in range(14)] + ["/", "/pricing"]
REFERRERS = ["(direct)", "news.ycombinator.com", "google.com", "t.co", "duckduckgo.com", "example.org"]
LOADED = [dt.date(2026, 9, 28) + dt.timedelta(days=i) for i in range(21)]  # 2026-W40 to W42, all settled
SUBSCRIBED = dt.datetime(2026, 10, 1, tzinfo=dt.UTC)  # before the weeks reported on


class Inbox:
    """What the local SMTP server received, parsed."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.lock = threading.Lock()

    async def handle_DATA(self, server: object, session: object, envelope: object) -> str:
        parsed = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self.lock:
            self.messages.append(parsed)
        return "250 OK"


@pytest.fixture
def inbox(settings) -> Iterator[Inbox]:
    """A real SMTP server on 127.0.0.1 that Django's SMTP backend sends to for this test."""
    box = Inbox()
    controller = Controller(box, hostname="127.0.0.1", port=free_port())
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", controller.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    yield box
    controller.stop()


@pytest.fixture
def site_key(db: None) -> SiteKey:
    return make_site(tz=TZ)


@pytest.fixture
def goals(site_key: SiteKey) -> list[Goal]:
    return [
        Goal.objects.create(site=site_key.site, name="Pricing", kind="page", path="/pricing"),
        Goal.objects.create(site=site_key.site, name="Signup", kind="event", event="signup"),
    ]


def day_documents(site_id: str, day: dt.date, goals: list[Goal], rng: random.Random) -> DayDocuments:
    """A generated settled day: totals, page and referrer rows, goal conversions."""
    pages = {p: rng.randrange(0, 400) for p in PAGES}
    refs = {r: rng.randrange(0, 300) for r in REFERRERS}
    pageviews = sum(pages.values())
    visitors = pageviews // 3 + rng.randrange(0, 20)
    sessions = visitors + rng.randrange(0, 40)
    bounces = rng.randrange(0, sessions + 1)
    rows: list[dict[str, object]] = [
        {"dimension": "page", "value": p, "pageviews": n, "visitors": n // 2} for p, n in pages.items() if n
    ]
    rows += [{"dimension": "ref", "value": r, "pageviews": n, "visitors": n // 3} for r, n in refs.items() if n]
    for goal in goals:
        events = rng.randrange(0, 30)
        rows.append({"dimension": "goal", "value": str(goal.pk), "name": goal.name, "pageviews": 0, "events": events,
                     "visitors": events // 2})  # fmt: skip
    daily = {"pageviews": pageviews, "visitors": visitors, "sessions": sessions, "bounces": bounces,
             "bounce_rate": round(bounces / sessions, 6),
             "visit_duration_s": round(rng.uniform(5, 400), 3)}  # fmt: skip
    run = {"status": "complete", "tz": TZ, "goal_ids": [str(g.pk) for g in goals]}
    return DayDocuments(site_id, day.isoformat(), daily, [], rows, run)


@pytest.fixture
def loaded(cfg, site_key: SiteKey, goals: list[Goal]) -> Iterator[dict[str, DayDocuments]]:
    """Three generated weeks (2026-W40 to W42) loaded with the rollup's own loader."""
    site = site_key.site.site_id
    mongo, db = connect(cfg.mongo_url, cfg.mongo_db)
    rng = random.Random(32)
    days = {}
    try:
        for day in LOADED:
            days[day.isoformat()] = doc = day_documents(site, day, goals, rng)
            load_day(db, doc)
        yield days
    finally:
        for name in (*ROLLUP_COLLECTIONS, RUNS):
            db[name].delete_many({"site_id": site})
        mongo.close()


def api(client: Client, sk: SiteKey, path: str, first: dt.date, end: dt.date, **params: object) -> dict:
    response = sk.get(client, path, **{"from": first.isoformat(), "to": end.isoformat(), **params})
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.parametrize("key", ["2026-W41", "2026-10"])
def test_a_report_has_the_apis_figures_for_its_period(
    client: Client, site_key: SiteKey, loaded: dict[str, DayDocuments], key: str
) -> None:
    """Every figure of the report equals the API's for the same days (a week all settled; a
    month partly not rolled up, so partly uncounted, with an uncomparable month before)."""
    period = parse_period(key)
    report = render_report(site_key.site, period).report
    before = period.previous()

    now = api(client, site_key, "aggregate", period.first, period.end, compare="previous_period")["results"]
    then = api(client, site_key, "aggregate", before.first, before.end)["results"]
    for name, total in report.totals.items():
        assert (total.value, total.previous) == (now[name]["value"], then[name]["value"]), name
        if key.startswith("2026-W"):  # a week without a clock change: the API's previous period is the week before
            assert (total.previous, total.change) == (now[name]["previous"], now[name]["change"]), name
    assert report.top_pages == api(client, site_key, "breakdown/pages", period.first, period.end, limit=10,
                                   metrics="pageviews,visitors")["results"]  # fmt: skip
    assert report.top_referrers == api(client, site_key, "breakdown/referrers", period.first, period.end, limit=10,
                                       metrics="pageviews,visitors")["results"]  # fmt: skip
    assert report.goals == api(client, site_key, "goals", period.first, period.end)["results"]
    series = api(client, site_key, "timeseries", period.first, period.end, metric="visitors", interval="day")
    assert [(t.isoformat(), v) for t, v in report.daily_visitors] == [(p["t"], p["value"]) for p in series["points"]]

    # Not vacuous: the figures are the generated ones.
    days = [loaded[d] for d in period.days() if d in loaded]
    assert report.totals["visitors"].value == sum(d.daily["visitors"] for d in days) > 0
    assert len(report.top_pages) == 10
    assert len(report.goals) == 2
    if key == "2026-W41":
        assert not report.partial
        assert report.totals["visitors"].change is not None
    else:  # October: days from the 19th were never rolled up and are long out of the realtime window
        assert report.unsettled_days[0] == "2026-10-19"
        assert report.uncounted
        assert report.totals["visitors"].change is None  # September is counted from the 28th only


def test_the_task_sends_each_report_once_with_its_unsubscribe_headers(
    site_key: SiteKey, loaded: dict[str, DayDocuments], inbox: Inbox
) -> None:
    """The hourly task sends Monday's weekly report to its subscriber once; a run again sends
    nothing, nor does a subscription made after the week ended."""
    sub = ReportSubscription.objects.create(site=site_key.site, email="ann@example.com", frequency="weekly",
                                            created_at=SUBSCRIBED)  # fmt: skip
    ReportSubscription.objects.create(site=site_key.site, email="late@example.com", frequency="weekly")
    monday = "2026-10-12T09:00:00+00:00"
    first = send_reports(monday)
    again = send_reports(monday)

    assert first["sent"] == [f"{site_key.site.site_id}/2026-W41 -> ann@example.com"]
    assert again == {"sent": [], "deferred": [], "failed": []}
    assert len(inbox.messages) == 1
    msg = inbox.messages[0]
    assert msg["To"] == "ann@example.com"
    assert "week 41, 5-11 October 2026" in msg["Subject"]
    link = msg["List-Unsubscribe"].strip().strip("<>")
    assert link.startswith("http")
    assert "/alerts/unsubscribe/" in link
    assert msg["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert msg.get_content_type() == "multipart/related"
    text = msg.get_body(("plain",)).get_content()
    html = msg.get_body(("html",)).get_content()
    visitors = sum(loaded[d].daily["visitors"] for d in parse_period("2026-W41").days())
    assert f"{visitors:,}" in text
    assert f"{visitors:,}" in html
    assert link in text
    assert "cid:visitors-chart" in html
    images = [p for p in msg.walk() if p.get_content_type() == "image/png"]
    assert len(images) == 1
    assert images[0]["Content-ID"] == "<visitors-chart>"
    assert images[0].get_content().startswith(b"\x89PNG")

    delivery = Delivery.objects.get(subscription=sub)
    assert (delivery.period, delivery.status, delivery.attempts) == ("2026-W41", Delivery.SENT, 1)
    sub.refresh_from_db()
    assert sub.last_period == "2026-W41"


def test_the_unsubscribe_link_works_once_and_refuses_a_tampered_token(
    client: Client, site_key: SiteKey, loaded: dict[str, DayDocuments], inbox: Inbox
) -> None:
    """GET confirms, the one-click POST unsubscribes (a second says so, changing nothing), a
    tampered token is a 400, and the unsubscribed recipient gets no further report."""
    ann = ReportSubscription.objects.create(site=site_key.site, email="ann@example.com", frequency="weekly",
                                            created_at=SUBSCRIBED)  # fmt: skip
    ReportSubscription.objects.create(site=site_key.site, email="bob@example.com", frequency="weekly",
                                      created_at=SUBSCRIBED)  # fmt: skip
    send_reports("2026-10-12T09:00:00+00:00")
    to_ann = next(m for m in inbox.messages if m["To"] == "ann@example.com")
    path = urlsplit(to_ann["List-Unsubscribe"].strip().strip("<>")).path

    page = client.get(path)
    assert page.status_code == 200
    assert b"Unsubscribe from API test" in page.content
    token = path.rsplit("/", 1)[1]
    tampered = path[: -len(token)] + token[:-1] + ("A" if token[-1] != "A" else "B")
    refused = client.get(tampered)
    assert refused.status_code == 400
    assert b"not valid" in refused.content
    assert client.post(tampered).status_code == 400

    one_click = {"data": "List-Unsubscribe=One-Click", "content_type": "application/x-www-form-urlencoded"}
    done = client.post(path, **one_click)
    assert done.status_code == 200
    assert b"You are unsubscribed" in done.content
    ann.refresh_from_db()
    when = ann.unsubscribed_at
    assert when is not None
    twice = client.post(path, **one_click)
    assert twice.status_code == 200
    assert b"Already unsubscribed" in twice.content
    ann.refresh_from_db()
    assert ann.unsubscribed_at == when

    inbox.messages.clear()
    next_week = send_reports("2026-10-19T09:00:00+00:00")
    assert [m["To"] for m in inbox.messages] == ["bob@example.com"]
    assert next_week["sent"] == [f"{site_key.site.site_id}/2026-W42 -> bob@example.com"]
    assert not Delivery.objects.filter(subscription=ann, period="2026-W42").exists()


def test_a_report_waits_for_the_rollup_then_goes_out_saying_what_is_not_final(
    cfg, site_key: SiteKey, loaded: dict[str, DayDocuments], inbox: Inbox
) -> None:
    """With Sunday not rolled up, Monday morning's run defers the report; past the grace
    time it goes out with the merge and names the day that is not final."""
    mongo, db = connect(cfg.mongo_url, cfg.mongo_db)
    try:
        db[RUNS].delete_one({"site_id": site_key.site.site_id, "day": "2026-10-18"})
    finally:
        mongo.close()
    ReportSubscription.objects.create(site=site_key.site, email="ann@example.com", frequency="weekly",
                                      created_at=SUBSCRIBED)  # fmt: skip
    label = f"{site_key.site.site_id}/2026-W42"
    assert send_reports("2026-10-19T06:00:00+00:00")["deferred"] == [label]
    assert not inbox.messages
    assert not Delivery.objects.exists()

    late = send_reports("2026-10-19T19:00:00+00:00")  # 21:00 in Berlin: past the 20 hours of grace
    assert late["sent"] == [f"{label} -> ann@example.com"]
    text = inbox.messages[0].get_body(("plain",)).get_content()
    assert "Not final: the nightly rollup had not settled 2026-10-18" in text


def test_send_report_previews_and_sends_by_hand(
    capsys: pytest.CaptureFixture[str], site_key: SiteKey, loaded: dict[str, DayDocuments], inbox: Inbox
) -> None:
    """``manage.py send_report``: a dry run prints the message and sends nothing; --to sends
    it without an unsubscribe link; a bad period or address is refused with the reason."""
    site = site_key.site.site_id
    call_command("send_report", site, "--period", "2026-W41", "--to", "cat@example.com", "--dry-run")
    preview = capsys.readouterr().out
    assert "Subject: API test: week 41, 5-11 October 2026" in preview
    assert "Top pages" in preview
    assert not inbox.messages

    call_command("send_report", site, "--period", "2026-W41", "--to", "cat@example.com")
    assert len(inbox.messages) == 1
    assert inbox.messages[0]["List-Unsubscribe"] is None
    assert not Delivery.objects.exists()

    with pytest.raises(CommandError, match="2026-W47 or a month"):
        call_command("send_report", site, "--period", "last week", "--to", "cat@example.com")
    with pytest.raises(CommandError, match="not an email address"):
        call_command("send_report", site, "--period", "2026-W41", "--to", "cat")
    with pytest.raises(CommandError, match="no weekly subscriber"):
        call_command("send_report", site, "--period", "2026-W41")
