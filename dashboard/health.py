"""The Health page: pipeline freshness, consumer lag, rollups per day, realtime-vs-batch drift
and invalid events; its layout and its callback. Each part is read on its own, so one service
being down leaves the others on screen, with a message saying which one failed and what to do."""

from __future__ import annotations

from zoneinfo import ZoneInfo

from dash import Dash, Input, Output, dcc, html, no_update

from dashboard import figures, messages, tables
from dashboard.access import current
from dashboard.callbacks import Callbacks
from dashboard.components import alert, card, table
from footfall.config import footfall_config
from query.runtime import get_health, get_service

callbacks = Callbacks()
REFRESH_MS = 15_000
DAYS_SHOWN = 14


# -- layout -------------------------------------------------------------------------------


def page() -> html.Div:
    return html.Div(
        [
            dcc.Interval(id="health-tick", interval=REFRESH_MS),
            html.Div(
                [html.H1("Pipeline health"), html.Span("Loading…", id="health-status", className="status")],
                className="page-head",
            ),
            alert("health-error"),
            html.Div(
                [
                    card("Last event seen (this site)", "health-last-event", "health-last-event-sub"),
                    card("Realtime consumer lag", "health-rt-lag", "health-rt-lag-sub"),
                    card("Archiver lag", "health-archive-lag", "health-archive-lag-sub"),
                    card("Invalid events", "health-invalid", "health-invalid-sub"),
                ],
                className="cards",
            ),
            html.Section(
                [
                    html.H2("Last rollup per day"),
                    html.P(messages.NO_ROLLUPS, id="health-rollups-empty", className="empty-note", hidden=True),
                    table(
                        "health-rollups",
                        [
                            {"name": "Day", "id": "day"},
                            {"name": "Status", "id": "status"},
                            {"name": "Rolled up at (site time)", "id": "computed_at"},
                            {"name": "Events read", "id": "events_read", "type": "numeric", "format": tables.INT},
                            {"name": "Page views", "id": "pageviews", "type": "numeric", "format": tables.INT},
                            {"name": "Spark", "id": "spark_master"},
                        ],
                        page_size=14,
                    ),
                ],
                className="panel",
            ),
            html.Section(
                [
                    html.H2("Realtime vs batch drift (reconciliation)"),
                    html.P(messages.NO_DRIFT, id="health-drift-empty", className="empty-note", hidden=True),
                    table(
                        "health-drift",
                        [
                            {"name": "Day", "id": "day"},
                            {"name": "Realtime page views", "id": "realtime_pageviews", "type": "numeric"},
                            {"name": "Batch page views", "id": "batch_pageviews", "type": "numeric"},
                            {"name": "Page views drift %", "id": "pageviews_drift_pct", "type": "numeric"},
                            {"name": "Visitors drift %", "id": "visitors_drift_pct", "type": "numeric"},
                            {"name": "Realtime coverage %", "id": "coverage_pct", "type": "numeric"},
                            {"name": "Checked at", "id": "checked_at"},
                        ],
                        page_size=14,
                    ),
                ],
                className="panel",
            ),
            html.Section(
                [
                    html.H2("Invalid events by reason (all sites)"),
                    html.P(messages.NO_INVALID, id="health-invalid-empty", className="empty-note", hidden=True),
                    table(
                        "health-invalid-table",
                        [{"name": "Reason", "id": "reason"}, {"name": "Events", "id": "events", "type": "numeric"}],
                    ),
                ],
                className="panel",
            ),
        ],
        id="health-page",
    )


def refused() -> html.Div:
    return html.Div([html.H2("Health"), html.P(messages.HEALTH_SIGNED_IN)], className="empty")


# -- callback -----------------------------------------------------------------------------

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


@callbacks.callback(*OUTPUTS, Input("health-tick", "n_intervals"), Input("site", "value"))
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
    status = f"Checked {checked:%H:%M:%S} ({tz.key}) · refreshes every {REFRESH_MS // 1000} s"
    return (
        *last_ev, *rt_lag, *arch, inv[0], inv[1], *runs_out, *drift_out, inv[2], inv[3],
        status, " ".join(problems), not problems,
    )  # fmt: skip


def register(app: Dash) -> None:
    """Register the page's callbacks on ``app``."""
    callbacks.register(app)
