"""The health panel: pipeline freshness, consumer lag, rollups per day, realtime-vs-batch
drift and invalid events. Each part is read on its own, so one service being down leaves
the others on screen, with a message saying which one failed and what to do."""

from __future__ import annotations

from zoneinfo import ZoneInfo

from dash import Dash, Input, Output, no_update

from collector.runtime import footfall_config
from dashboard import figures, messages, tables
from dashboard.access import current
from dashboard.layout import HEALTH_REFRESH_MS
from query.runtime import get_health, get_service

DAYS_SHOWN = 14


OUTPUTS = [
    Output("health-last-event", "children"),
    Output("health-last-event-sub", "children"),
    Output("health-rt-lag", "children"),
    Output("health-rt-lag-sub", "children"),
    Output("health-archive-lag", "children"),
    Output("health-archive-lag-sub", "children"),
    Output("health-invalid", "children"),
    Output("health-invalid-sub", "children"),
    Output("health-rollups", "data"),
    Output("health-rollups-empty", "hidden"),
    Output("health-drift", "data"),
    Output("health-drift-empty", "hidden"),
    Output("health-invalid-table", "data"),
    Output("health-invalid-empty", "hidden"),
    Output("health-status", "children"),
    Output("health-error", "children"),
    Output("health-error", "hidden"),
]


def register(app: Dash) -> None:
    @app.callback(*OUTPUTS, Input("health-tick", "n_intervals"), Input("site", "value"))
    def refresh(_tick: int | None, site_id: str | None) -> tuple:
        access = current()
        site = access.site(site_id)
        if site is None or not access.can_see_health:
            return (no_update,) * (len(OUTPUTS) - 2) + (messages.HEALTH_SIGNED_IN if site else "Choose a site.", False)
        cfg = footfall_config()
        tz = ZoneInfo(site.tz)
        service = get_service()
        now_ms = int(service.now().timestamp() * 1000)
        out: dict[str, object] = {}
        problems: list[str] = []

        health = get_health()
        try:
            speed = health.speed_layer(site.site_id)
            stats = speed.stats
            out["last"] = (
                tables.ago(speed.last_event_ms, now_ms),
                "event time of the newest counted event (realtime layer)",
            )
            invalid = tables.invalid_rows(stats)
            out["invalid"] = (
                figures.fmt_number(stats.get("invalid", 0)),
                f"since the counters started · {figures.fmt_number(stats.get('duplicates', 0))} duplicates dropped, "
                f"{figures.fmt_number(stats.get('late', 0))} late",
                invalid,
                bool(invalid),
            )
        except Exception as exc:
            problems.append(messages.problem(exc, cfg))

        try:
            pipe = health.lag()
            rt = pipe["realtime"]
            out["rt"] = (
                figures.fmt_number(rt["lag_total"]),
                f"messages behind · {rt['workers_alive']} worker(s) alive · {rt['events_per_s']} events/s",
            )
            out["arch"] = (figures.fmt_number(pipe["archiver_lag"]), "messages not yet in the raw archive")
        except Exception as exc:
            problems.append(messages.problem(exc, cfg))

        try:
            runs, drift = health.batch_days(site.site_id, DAYS_SHOWN)
            out["runs"] = (tables.rollup_rows(runs, tz), bool(runs))
            out["drift"] = (tables.drift_rows(drift, tz), bool(drift))
        except Exception as exc:
            problems.append(messages.problem(exc, cfg))

        keep = (no_update, no_update)
        last_ev = out.get("last", keep)
        rt_lag = out.get("rt", keep)
        arch = out.get("arch", keep)
        inv = out.get("invalid", (no_update,) * 4)
        runs_out = out.get("runs", keep)
        drift_out = out.get("drift", keep)
        checked = service.now().astimezone(tz)
        status = f"Checked {checked:%H:%M:%S} ({tz.key}) · refreshes every {HEALTH_REFRESH_MS // 1000} s"
        return (
            *last_ev, *rt_lag, *arch, inv[0], inv[1], *runs_out, *drift_out, inv[2], inv[3],
            status, " ".join(problems), not problems,
        )  # fmt: skip
