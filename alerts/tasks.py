"""Celery tasks of alerts and reports: thin wrappers around the domain functions."""

from __future__ import annotations

import datetime as dt

from celery import shared_task

from alerts.report_delivery import send_due_reports


@shared_task(name="alerts.tasks.send_reports", ignore_result=True)
def send_reports(now: str | None = None) -> dict[str, list[str]]:
    """Send the weekly and monthly reports due at ``now`` (ISO 8601 with an offset; default the
    current time), each once (``alerts.report_delivery``); returns what was sent, deferred or failed."""
    moment = dt.datetime.now(dt.UTC) if now is None else dt.datetime.fromisoformat(now)
    if moment.tzinfo is None:
        raise ValueError(f"now must carry a UTC offset, e.g. 2026-11-23T08:00:00+00:00, not {now!r}")
    return send_due_reports(moment).as_dict()
