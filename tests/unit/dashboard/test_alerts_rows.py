"""The Alerts page's pure parts: figures, durations, rule texts, hidden webhook paths, where
each validation message goes, and which permission each change needs."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from alerts.models import THRESHOLD_MEANING, AlertRule, Channel, Episode, webhook_target
from dashboard import alerts, alerts_rows
from dashboard.access import ALERT_PERMISSIONS
from dashboard.alerts import permission
from dashboard.shell import page_of

XSS = "<img src=x onerror=alert(1)>"


@pytest.mark.parametrize(
    ("value", "shown"), [(None, "—"), (3.0, "3"), (12345, "12,345"), (0.125, "0.12"), (2.5, "2.5")]
)
def test_number(value: float | None, shown: str) -> None:
    assert alerts_rows.number(value) == shown


@pytest.mark.parametrize(("seconds", "shown"), [(-5, "0 min"), (59, "0 min"), (2700, "45 min"),
                                                (3 * 3600 + 300, "3 h 5 min"), (52 * 3600, "2 d 4 h")])  # fmt: skip
def test_duration(seconds: float, shown: str) -> None:
    assert alerts_rows.duration(seconds) == shown


def test_rule_texts_say_what_is_watched_and_what_the_threshold_means() -> None:
    spike = AlertRule(kind="spike", threshold=3, scope="ref", value="news.example")
    assert alerts_rows.threshold_text(spike) == f"3 — {THRESHOLD_MEANING['spike']}"
    assert alerts_rows.subject_text(spike) == "referrer news.example"
    assert alerts_rows.subject_text(AlertRule(kind="spike", threshold=3, scope="page")) == "any page"
    assert alerts_rows.subject_text(AlertRule(kind="drop", threshold=0.5)) == "the whole site"
    assert alerts_rows.subject_text(AlertRule(kind="archiver_lag", threshold=1000)) == "the pipeline"
    assert alerts_rows.threshold_text(AlertRule(kind="drop", threshold=0.5)).startswith("0.5 — share of the usual")


def test_webhook_urls_are_shown_by_host_only() -> None:
    """A Slack-style URL is its own credential: its path never reaches the page."""
    hook = Channel(kind="webhook", url="https://hooks.slack.com/services/T0/B0/SECRET", slack=True)
    [row] = alerts_rows.channel_rows([hook])
    assert row["target"] == "https://hooks.slack.com/…"
    assert row["kind"] == "webhook (Slack body)"
    assert webhook_target("not a url") == "(hidden)"


def test_episode_rows_keep_traffic_values_as_text_and_compare_with_the_threshold() -> None:
    rule = AlertRule(name="r", kind="spike", threshold=3)
    opened = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC)
    episode = Episode(pk=7, rule=rule, opened_at=opened, value=4.5, peak=6, details={"summary": XSS, "threshold": 2})
    [row] = alerts_rows.open_rows([episode], ZoneInfo("Europe/Berlin"), opened + dt.timedelta(minutes=90))
    assert row == {"id": 7, "rule": "r", "summary": XSS, "since": "2026-11-20 11:00 (1 h 30 min ago)",
                   "value": "4.5 vs 2", "peak": "6", "delivered": "yes"}  # fmt: skip
    bare = Episode(pk=8, rule=rule, opened_at=opened, resolved_at=opened + dt.timedelta(hours=1), value=4, peak=5,
                   details="not a dict", suppressed=True)  # fmt: skip
    [past] = alerts_rows.past_rows([bare], ZoneInfo("UTC"))
    assert (past["summary"], past["value"], past["lasted"]) == ("traffic spike", "4 vs 3", "1 h 0 min")
    assert past["delivered"] == "no: over the daily limit"


def test_field_errors_go_beside_their_field_and_the_rest_on_the_form_line() -> None:
    beside, rest = alerts.field_errors("subscription", {"email": ["bad address"], "site": ["gone"], "__all__": ["x"]})
    assert beside == ["bad address", ""]
    assert rest == "gone x"


def test_each_change_needs_its_model_permission() -> None:
    assert permission("rule", "create") == "footfall_alerts.add_alertrule"
    assert permission("channel", "disable") == "footfall_alerts.change_channel"
    assert permission("subscription", "delete") == "footfall_alerts.delete_reportsubscription"
    needed = {permission(t, a) for t, a in alerts.ACTIONS} | {permission(f, "create") for f in alerts.FORMS}
    assert needed <= set(ALERT_PERMISSIONS)


def test_the_alerts_page_has_its_path() -> None:
    assert page_of("/dashboard/alerts") == "alerts"
