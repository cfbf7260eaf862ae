"""Layout and rendering of the dashboard's pages from query results (pure, no services)."""

from __future__ import annotations

import datetime as dt
import json
from types import SimpleNamespace
from zoneinfo import ZoneInfo

import plotly.utils
import pytest
import redis
from confluent_kafka import KafkaException
from pymongo.errors import PyMongoError

from dashboard import messages, shell
from dashboard.access import Access, SiteChoice
from dashboard.history import METRICS, cards
from dashboard.live import OUTPUTS, blank, render
from dashboard.shell import site_from_search
from footfall.vocabulary import QueryError

LIVE = {
    "minutes": 30,
    "concurrent_visitors": 3,
    "pageviews": 1200,
    "visitors": 40,
    "pageviews_per_minute": [{"t": "2026-11-01T10:00:00+00:00", "value": 1200}],
    "top_pages": [{"value": "<script>x</script>", "pageviews": 1200, "visitors": 40}],
    "top_referrers": [{"value": "(direct)", "pageviews": 1200, "visitors": 40}],
    "rising_pages": [],
    "rising_referrers": [],
    "flows": [{"referrer": "(direct)", "page": "<script>x</script>", "pageviews": 1200}],
}


def test_page_of_and_href() -> None:
    assert [shell.page_of(p) for p in ("/dashboard/", "/dashboard/history", "/dashboard/health/", "/x", None)] == [
        "live", "history", "health", "live", "live"
    ]  # fmt: skip
    assert shell.href("live", "demo") == "/dashboard/?site=demo"
    assert shell.href("history", None) == "/dashboard/history"


def test_site_from_search() -> None:
    assert site_from_search("?site=demo&x=1") == "demo"
    assert site_from_search("") is None


def test_access_looks_sites_up_never_trusts_them() -> None:
    access = Access(sites=(SiteChoice("a", "A", "UTC"),), username="u")
    assert access.site("a").info.tz == "UTC"
    assert access.site("b") is None
    assert access.site(["a"]) is None
    assert Access().can_see_health is False
    assert access.can_see_health is True


def test_shell_lists_only_the_allowed_sites() -> None:
    """The site picker holds the request's sites; share viewers get no live events, health or alerts
    link and no sign-out."""
    shared = Access(sites=(SiteChoice("a", "Site A", "UTC"),))
    body = json.dumps(shell.layout(shared).to_plotly_json(), cls=plotly.utils.PlotlyJSONEncoder)
    assert '"label": "Site A (a)"' in body
    assert "read-only" in body
    assert "sign-out" not in body
    nav = shell.layout(shared).children[1].children[2].children
    # live, events, history, journeys, install, health, alerts
    assert [span.hidden for span in nav] == [False, True, False, False, True, True, True]
    assert shell.no_sites(Access(shared_revoked=True)).children[1].children == messages.SHARE_REVOKED
    assert shell.no_sites(Access(username="u")).children[1].children == messages.NO_SITES
    assert shell.no_sites(Access(username="root", staff=True)).children[1].children == messages.NO_SITES_STAFF


def test_only_staff_are_told_server_commands() -> None:
    """A user who cannot run manage.py is told whom to ask; staff, who see every site, how to create one."""
    assert "manage.py" not in messages.NO_SITES
    assert "administrator" in messages.NO_SITES
    assert "manage.py create_site" in messages.NO_SITES_STAFF


def test_live_render_fills_every_output() -> None:
    """One realtime answer fills all outputs: numbers formatted, values as plain table text."""
    out = render(LIVE, ZoneInfo("Europe/Berlin"), "demo", dt.datetime(2026, 11, 1, 10, 0, 30, tzinfo=dt.UTC))
    assert len(out) == len(OUTPUTS) == len(blank("x"))
    assert out[:5] == ("3", "1,200", "in the last 30 min", "40", "in the last 30 min (estimate ±1 %)")
    assert out[6] == [{"value": "<script>x</script>", "pageviews": 1200, "visitors": 40}]
    assert out[9] is False  # the "nothing is rising" note is shown
    assert out[11] is True  # no "other values" row: their note is hidden
    assert out[13] is True  # traffic: the empty-state note is hidden
    assert out[14].startswith("Updated 11:00:30 (Europe/Berlin)")


def test_live_render_empty_state_tells_what_to_do() -> None:
    quiet = {**LIVE, "pageviews": 0, "visitors": 0, "pageviews_per_minute": [], "top_pages": [], "flows": []}
    out = render(quiet, ZoneInfo("UTC"), "my-site", dt.datetime(2026, 11, 1, tzinfo=dt.UTC))
    assert 'data-site="my-site"' in out[12]
    assert out[13] is False


def test_history_cards_with_and_without_comparison() -> None:
    results = {m: {"value": 10, "previous": 8, "change": 0.25} for m in METRICS}
    results["sessions"] = {"value": None, "previous": None, "change": None}
    shown = cards({"results": results}, compare=True)
    assert shown[: len(METRICS)] == ["10", "10", "—", "1000.0 %", "10s"]
    assert shown[len(METRICS) + 2] == "previous period: —"
    assert cards({"results": results}, compare=False)[len(METRICS) :] == [""] * len(METRICS)


def test_problems_say_what_to_do() -> None:
    development = SimpleNamespace(environment="local", redis_url="redis://127.0.0.1:16379/0")
    assert "deploy/local/up.sh" in messages.problem(redis.ConnectionError("refused"), development)
    assert "REDIS_URL" in messages.problem(redis.ConnectionError("refused"), development)
    assert "Change the range" in messages.problem(QueryError("from", "bad"))
    assert "logged" in messages.problem(RuntimeError("boom"))


@pytest.mark.parametrize("exc", [redis.ConnectionError("refused"), PyMongoError("down"), KafkaException("down")])
@pytest.mark.parametrize("environment", ["production", "test", None])
def test_production_users_are_never_told_development_commands(exc: Exception, environment: str | None) -> None:
    """Outside development mode (or without a config) a failed store names the setting to check, no local script."""
    cfg = SimpleNamespace(environment=environment, redis_url="redis://r:6379/0", mongo_url="mongodb://m/")
    shown = messages.problem(exc, cfg if environment else None)
    assert "deploy/local" not in shown
    assert "deploy.local" not in shown
    assert "operator should check that" in shown
    assert any(v in shown for v in ("REDIS_URL", "MONGO_URL", "KAFKA_BOOTSTRAP_SERVERS"))


def test_problems_never_show_credentials_and_nothing_internal_to_share_viewers() -> None:
    cfg = SimpleNamespace(redis_url="redis://:s3cret@cache.internal:6380/0", mongo_url="mongodb://u:pw@db:27017/x")
    shown = messages.problem(redis.ConnectionError("refused"), cfg)
    assert "redis://cache.internal:6380/0" in shown
    assert "s3cret" not in shown
    assert "pw" not in messages.problem(PyMongoError("down"), cfg)
    public = messages.problem(redis.ConnectionError("refused"), cfg, public=True)
    assert public == messages.UNAVAILABLE_PUBLIC
    assert "Change the range" in messages.problem(QueryError("from", "bad"), cfg, public=True)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:pw@h:1/0", "redis://h:1/0"),
        ("mongodb://user:pw@[::1]:27017/db?authSource=admin", "mongodb://[::1]:27017/db"),
        ("redis://localhost/2", "redis://localhost/2"),
        ("not a url", "not a url"),
        ("user:pw@host", "(address hidden)"),
    ],
)
def test_where_drops_credentials(url: str, shown: str) -> None:
    assert messages.where(url) == shown


def test_live_render_names_other_values_and_says_what_the_cap_is() -> None:
    """Values past the speed layer's caps read as "other values" in tables and flows, with the note shown."""
    over = {
        **LIVE,
        "top_referrers": [{"value": "(other)", "pageviews": 1000, "visitors": 990}],
        "flows": [{"referrer": "(other)", "page": "(other)", "pageviews": 1000}],
    }
    out = render(over, ZoneInfo("UTC"), "demo", dt.datetime(2026, 11, 1, tzinfo=dt.UTC))
    assert out[7] == [{"value": "other values", "pageviews": 1000, "visitors": 990}]
    assert out[11] is False  # the note saying what "other values" are is shown
    sankey = json.loads(json.dumps(out[10], cls=plotly.utils.PlotlyJSONEncoder))["data"][0]
    assert sankey["node"]["label"] == ["other values", "other values"]
    assert sankey["link"]["value"] == [1000]
    assert "1,000" in messages.OTHER_VALUES_NOTE
    assert "10,000" in messages.OTHER_VALUES_NOTE
