"""What the dashboard says when something is empty or broken, and what to do about it. Pure."""

from __future__ import annotations

import redis
from confluent_kafka import KafkaException
from pymongo.errors import PyMongoError

from realtime.queries import QueryError

START_STACK = "start the stack with deploy/local/up.sh (or `python -m deploy.local.stack start {service}`)"

NO_SITES = (
    "You cannot see any site yet. Ask an administrator to grant you one (Django admin → Dashboard → "
    "Site access, or `manage.py dashboard_user <you> --site <site>`), or create a site with `manage.py create_site`."
)
SHARE_REVOKED = "This share link was revoked, so its site is no longer shown. Ask the site's owner for a new link."
NO_LIVE_TRAFFIC = (
    "No page views in this window. Check that the site sends events: add "
    '<script defer src="…/footfall.js" data-site="{site}"></script> to its pages, or install the Django '
    "middleware (see the README), and that the realtime workers run (`manage.py run_realtime`)."
)
NO_HISTORY = (
    "No traffic in this range. Pick a longer range, or check that events arrive (the live view) and that the "
    "nightly rollup ran (the health panel)."
)
NO_RISING = (
    "Nothing is rising right now: a page or referrer shows up here when its last 10 minutes clearly beat its "
    "usual level over the 3 hours before."
)
NO_ROLLUPS = (
    "No day of this site is rolled up yet. The nightly rollup runs from Celery beat; run one now with "
    "`manage.py rollup --from <day> --to <day>`."
)
NO_DRIFT = "No reconciliation yet: it is recorded after each rollup of a day still inside the realtime window."
NO_INVALID = "No invalid events: every event that reached the log was valid."
HEALTH_SIGNED_IN = "The health panel is for signed-in users. Sign in to see the pipeline's state."


def problem(exc: BaseException, cfg: object = None) -> str:
    """One sentence for a failed query: what is wrong and what to do."""
    if isinstance(exc, QueryError):
        return f"The query was refused ({exc.parameter}: {exc}). Change the range or filter and try again."
    if isinstance(exc, redis.RedisError):
        where = getattr(cfg, "redis_url", "REDIS_URL")
        return (
            f"Redis ({where}) is not answering, so live numbers are unavailable: "
            f"{START_STACK.format(service='redis')}, or check REDIS_URL."
        )
    if isinstance(exc, PyMongoError):
        where = getattr(cfg, "mongo_url", "MONGO_URL")
        return (
            f"MongoDB ({where}) is not answering, so settled days are unavailable: "
            f"{START_STACK.format(service='mongo')}, or check MONGO_URL."
        )
    if isinstance(exc, KafkaException):
        where = getattr(cfg, "kafka_bootstrap_servers", "KAFKA_BOOTSTRAP_SERVERS")
        return (
            f"Kafka ({where}) is not answering, so consumer lag is unknown: "
            f"{START_STACK.format(service='kafka')}, or check KAFKA_BOOTSTRAP_SERVERS."
        )
    return (
        f"Something went wrong ({type(exc).__name__}); it was logged on the server. "
        "Reload the page; if it persists, see the web process's log."
    )
