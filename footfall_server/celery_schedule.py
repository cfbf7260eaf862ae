"""The beat schedule: every periodic task in one place (run exactly one beat process).

Times are UTC (``CELERY_TIMEZONE``):

=========================  ===============  =================================================
entry                      when             what
=========================  ===============  =================================================
``nightly-rollup``         02:30 daily      each site's local yesterday plus the look-back window
``compact-archive``        hh:17 hourly     merge small files of archive hours that have ended
``realtime-housekeeping``  every minute     realtime retention: drop heartbeats of workers gone
                                            for a day (counters expire by TTL), record health
``replay-spool``           every 5 minutes  replay events spooled by collectors that are gone
``make-salts-ahead``       every 10 minutes create the daily salts of yesterday to the day after
                                            tomorrow (UTC) if missing, for read-only host users
``check-alerts``           every minute     check every enabled alert rule, open and resolve
                                            episodes, re-queue lost deliveries
``send-reports``           hh:07 hourly     weekly and monthly email reports due (each sent once;
                                            a site's report waits for its rollup, see docs/alerts.md)
=========================  ===============  =================================================

``expires`` drops a run that could not start before the next one is due, so a backlog
after an outage does not fire the same job many times.
"""

from __future__ import annotations

from celery.schedules import crontab

SCHEDULE = {
    "nightly-rollup": {
        "task": "historical.tasks.nightly_rollup",
        "schedule": crontab(hour=2, minute=30),
        "options": {"expires": 6 * 3600},
    },
    "compact-archive": {
        "task": "historical.tasks.compact_archive",
        "schedule": crontab(minute=17),
        "options": {"expires": 3000},
    },
    "realtime-housekeeping": {
        "task": "realtime.tasks.realtime_housekeeping",
        "schedule": 60.0,
        "options": {"expires": 55},
    },
    "replay-spool": {
        "task": "collector.tasks.replay_spool",
        "schedule": 300.0,
        "options": {"expires": 290},
    },
    "make-salts-ahead": {
        "task": "collector.tasks.make_salts_ahead",
        "schedule": 600.0,
        "options": {"expires": 590},
    },
    "check-alerts": {
        "task": "alerts.tasks.check_alerts",
        "schedule": 60.0,
        "options": {"expires": 50},
    },
    "send-reports": {
        "task": "alerts.tasks.send_reports",
        "schedule": crontab(minute=7),
        "options": {"expires": 3000},
    },
}
