"""A report as an email, without stores: the change rule, the subject, the parts and headers."""

from __future__ import annotations

import datetime as dt
import email
import email.policy
from zoneinfo import ZoneInfo

import pytest

from alerts.models import ReportSubscription
from alerts.periods import parse_period
from alerts.report_mail import CHART_CID, message, render
from alerts.reports import TOTALS, Report, Total, change


def test_the_change_follows_the_apis_rule() -> None:
    assert change(150, 100, previous_partial=False) == 0.5
    assert change(1, 3, previous_partial=False) == round(-2 / 3, 6)
    assert change(5, 0, previous_partial=False) is None
    assert change(None, 4, previous_partial=False) is None
    assert change(5, 4, previous_partial=True) is None


def report(**overrides: object) -> Report:
    period = parse_period("2026-W47")
    start = dt.datetime(2026, 11, 16, tzinfo=ZoneInfo("Europe/Berlin"))
    fields: dict[str, object] = {
        "site_id": "shop", "site_name": "Shop <&>", "tz": "Europe/Berlin", "period": period,
        "previous": period.previous(),
        "totals": {name: Total(1234, 1000, 0.234) for name in TOTALS} | {"bounce_rate": Total(0.5, None, None)},
        "top_pages": [{"value": "/a?b=<c>", "pageviews": 10, "visitors": 4}],
        "top_referrers": [], "goals": [],
        "daily_visitors": [(start + dt.timedelta(days=i), i * 10) for i in range(7)],
        "unsettled_days": [], "uncounted": False, "visitors_note": "visitors: sum of per-day counts",
    }  # fmt: skip
    return Report(**(fields | overrides))


def parsed(msg: object) -> email.message.EmailMessage:
    return email.message_from_bytes(msg.message().as_bytes(), policy=email.policy.default)


def test_a_subscribers_email_has_both_parts_the_chart_inline_and_one_click_headers() -> None:
    rendered = render(report())
    assert rendered.subject == "Shop <&>: week 47, 16-22 November 2026, 1,234 visitors (+23.4 %)"
    sub = ReportSubscription(pk=7, email="ann@example.com", frequency="weekly")
    msg = parsed(message(rendered, sub.email, sub))
    assert msg.get_content_type() == "multipart/related"
    assert msg["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    link = msg["List-Unsubscribe"].strip().removeprefix("<").removesuffix(">")
    html = msg.get_body(("html",)).get_content()
    text = msg.get_body(("plain",)).get_content()
    assert "Shop &lt;&amp;&gt;" in html  # the HTML escapes what sites and pages are called
    assert "Shop <&>" in text  # the text part does not
    assert "/a?b=<c>" in text
    assert link in text
    assert f"cid:{CHART_CID}" in html
    (image,) = [p for p in msg.walk() if p.get_content_type() == "image/png"]
    assert image["Content-ID"] == f"<{CHART_CID}>"


def test_a_report_sent_by_hand_has_no_unsubscribe_link() -> None:
    msg = parsed(message(render(report()), "cat@example.com"))
    assert msg["List-Unsubscribe"] is None
    assert "manage.py send_report" in msg.get_body(("plain",)).get_content()


@pytest.mark.parametrize("uncounted", [False, True])
def test_a_report_not_final_says_which_days(uncounted: bool) -> None:
    rendered = render(report(unsettled_days=["2026-11-21", "2026-11-22"], uncounted=uncounted))
    text = parsed(message(rendered, "cat@example.com")).get_body(("plain",)).get_content()
    assert "Not final: the nightly rollup had not settled 2026-11-21, 2026-11-22" in text
    assert ("not counted at all" in text) is uncounted


def test_no_visitor_figures_means_no_chart() -> None:
    rendered = render(report(daily_visitors=[]))
    assert rendered.chart is None
    assert parsed(message(rendered, "cat@example.com")).get_content_type() == "multipart/alternative"


def test_a_reports_goals_show_their_revenue() -> None:
    paid = {"name": "Purchase", "events": 4, "visitors": 2, "conversion_rate": 0.5, "revenue": {
        "currencies": [{"currency": "EUR", "total": "20.29", "conversions": 2, "average": "10.145",
                        "per_visitor": "5.0725"}], "without_revenue": 1}}  # fmt: skip
    plain = {"name": "Signup", "events": 3, "visitors": 3, "conversion_rate": 0.75, "revenue": None}
    msg = parsed(message(render(report(goals=[paid, plain])), "ann@example.com", None))
    text = msg.get_body(("plain",)).get_content()
    assert "Purchase: EUR 20.29" in text
    assert "Signup:" not in text
    assert ">EUR 20.29</td>" in msg.get_body(("html",)).get_content()
