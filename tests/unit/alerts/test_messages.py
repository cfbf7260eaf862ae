"""Rendering of an episode's messages: email parts, webhook JSON, Slack body, links."""

from __future__ import annotations

import datetime as dt
import email
import email.policy
import json

import pytest

from alerts.messages import CHART_CID, dashboard_link, episode_email, facts, parse_series, slack_body, webhook_body
from alerts.models import SPIKE, AlertRule, Episode
from footfall.models import Site

OPENED = dt.datetime(2026, 11, 26, 14, 0, tzinfo=dt.UTC)


def spike_episode(**details: object) -> Episode:
    site = Site(site_id="shop", name="The <Shop>", timezone="Europe/Berlin")
    rule = AlertRule(pk=4, site=site, name="Spike\non pages", kind=SPIKE, threshold=3.0, window_minutes=30)
    base = {
        "summary": "Visitors jumped to 240 in 30 minutes, z = 5.1",
        "metric": "visitors",
        "value": 240.0,
        "threshold": 3.0,
        "window_minutes": 30,
        "subject": "site",
        "top_referrers": [{"value": "news.ycombinator.com", "visitors": 180}, {"value": "t.co", "visitors": 20}],
        "top_pages": [{"value": "/blog/launch", "visitors": 200}],
        "series": [
            {"t": (OPENED - dt.timedelta(minutes=5 * i)).isoformat().replace("+00:00", "Z"), "v": 10 + (i == 0) * 200}
            for i in range(72)
        ],
        "dashboard_path": "/dashboard/shop/live",
    }
    base.update(details)
    return Episode(pk=9, rule=rule, opened_at=OPENED, value=5.1, peak=6.25, details=base)


def parse(message) -> email.message.EmailMessage:
    return email.message_from_bytes(message.message().as_bytes(), policy=email.policy.default)


def test_spike_email_has_text_html_the_top_referrer_and_an_inline_chart() -> None:
    message = parse(episode_email(spike_episode(), "opened", "ops@example.com", "https://stats.example.com/"))
    assert message["To"] == "ops@example.com"
    assert message["Subject"] == "[Footfall] The <Shop>: Spike on pages (traffic spike)"  # one line
    assert message.get_content_type() == "multipart/related"
    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    for body in (text, html):
        assert "news.ycombinator.com" in body
        assert "/blog/launch" in body
        assert "https://stats.example.com/dashboard/shop/live" in body
    assert "Referrers driving it" in text
    assert "The &lt;Shop&gt;" in html  # escaped in HTML, not in text
    assert "The <Shop>" in text
    assert f'src="cid:{CHART_CID}"' in html
    images = [p for p in message.walk() if p.get_content_type() == "image/png"]
    assert len(images) == 1
    assert images[0]["Content-ID"] == f"<{CHART_CID}>"
    assert images[0].get_content().startswith(b"\x89PNG")


def test_without_a_public_url_or_a_series_there_is_no_link_and_no_chart() -> None:
    message = parse(episode_email(spike_episode(series=[]), "opened", "ops@example.com", None))
    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    assert "http" not in text
    assert "href" not in html
    assert "cid:" not in html
    assert not [p for p in message.walk() if p.get_content_type() == "image/png"]


def test_a_malformed_series_sends_the_email_without_a_chart() -> None:
    message = parse(episode_email(spike_episode(series=[{"t": "yesterday", "v": 1}]), "opened", "a@b.c", None))
    assert "cid:" not in message.get_body(("html",)).get_content()


def test_resolved_email_says_when_and_how_long() -> None:
    episode = spike_episode()
    episode.resolved_at = OPENED + dt.timedelta(minutes=95)
    f = facts(episode, "resolved", None)
    assert (f.lasted, f.resolved_at, f.opened_at) == ("1 h 35 min", "2026-11-26 16:35 CET", "2026-11-26 15:00 CET")
    text = parse(episode_email(episode, "resolved", "a@b.c", None)).get_body(("plain",)).get_content()
    assert "Resolved: Spike on pages" in text
    assert "after 1 h 35 min" in text


def test_webhook_body_carries_the_details_and_iso_times() -> None:
    episode = spike_episode()
    body = webhook_body(31, episode, "opened", "https://stats.example.com")
    assert json.loads(json.dumps(body)) == body  # plain JSON
    assert body["schema"] == 1
    assert body["delivery_id"] == 31
    assert body["event"] == "opened"
    assert body["site"] == {"id": "shop", "name": "The <Shop>"}
    assert body["rule"]["kind"] == "spike"
    assert body["episode"] == {"id": 9, "opened_at": "2026-11-26T14:00:00Z", "resolved_at": None, "value": 5.1,
                               "peak": 6.25}  # fmt: skip
    assert body["details"]["top_referrers"][0]["value"] == "news.ycombinator.com"
    assert body["url"] == "https://stats.example.com/dashboard/shop/live"


def test_slack_body_escapes_user_text_and_links_the_dashboard() -> None:
    episode = spike_episode(top_referrers=[{"value": "<https://evil.example|click> @channel", "visitors": 3}])
    body = slack_body(episode, "opened", "https://stats.example.com")
    assert body["text"].startswith("The <Shop>: Spike on pages")
    sections = json.dumps(body["blocks"])
    assert "&lt;https://evil.example|click&gt;" in sections
    assert "<https://evil" not in sections
    assert body["blocks"][-1]["elements"][0]["url"] == "https://stats.example.com/dashboard/shop/live"
    assert "actions" not in json.dumps(slack_body(episode, "opened", None)["blocks"])


@pytest.mark.parametrize(
    ("path", "link"),
    [
        ("/dashboard/shop", "https://s.example/dashboard/shop"),
        ("//evil.example/x", None),
        ("https://evil.example/", None),
        ("/a b", None),
        (None, None),
        ("", None),
    ],
)
def test_links_stay_on_the_public_url(path: object, link: str | None) -> None:
    assert dashboard_link("https://s.example/", path) == link
    assert dashboard_link(None, path) is None


def test_series_parsing_names_the_bad_point() -> None:
    utc = dt.UTC
    points = parse_series([{"t": "2026-11-26T14:05:00Z", "v": 2}, {"t": "2026-11-26T14:00:00+00:00", "v": 1.5}], utc)
    assert points == [(OPENED, 1.5), (OPENED + dt.timedelta(minutes=5), 2.0)]
    with pytest.raises(ValueError, match=r"series\[1\]"):
        parse_series([{"t": "2026-11-26T14:05:00Z", "v": 2}, {"t": "2026-11-26T14:00:00", "v": 1}], utc)
    with pytest.raises(ValueError, match=r"series\[0\]"):
        parse_series([{"t": "2026-11-26T14:05:00Z", "v": True}], utc)
