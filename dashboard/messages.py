"""What the dashboard says when something is empty or broken, and what to do about it. Pure.

Each message fits whoever reads it: the local stack's commands only in development mode
(``FOOTFALL_ENV=local``), server commands only to staff, nothing internal to share links.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from footfall.config import DEVELOPMENT_ENV
from footfall.vocabulary import HOUR_VALUES, MINUTE_VALUES, QueryError
from query.health import failed_store

START_STACK = "start the stack with deploy/local/up.sh (or `python -m deploy.local.stack start {service}`)"
# Outside development the operator runs the services; the setting is what they can check.
CHECK_SERVICE = "the server's operator should check that {name} runs and that {variable} points at it"

NO_SITES = "You cannot see any site yet. Ask an administrator to grant you one."
# Staff see every site, so for them no site means none exists yet.
NO_SITES_STAFF = (
    "No site exists yet. Create one with `manage.py create_site <site> --domain <domain>`, then grant it to users "
    "(Django admin → Dashboard → Site access, or `manage.py dashboard_user <user> --site <site>`)."
)
SHARE_REVOKED = "This share link was revoked, so its site is no longer shown. Ask the site's owner for a new link."
NO_LIVE_TRAFFIC = (
    "No page views in this window. Check that the site sends events: add "
    '<script defer src="…/footfall.js" data-site="{site}"></script> to its pages, or install the Django '
    "middleware (see docs/host-package.md), and that the realtime workers run (`manage.py run_realtime`)."
)
OTHER_VALUES_NOTE = (
    f"“other values” sums what the live counters could not keep apart: each minute keeps the {MINUTE_VALUES:,} "
    f"busiest values of each dimension (each hour {HOUR_VALUES:,}) and counts the rest together. "
    "Days the nightly rollup has settled keep every value."
)
NO_HISTORY = (
    "No traffic in this range. Pick a longer range, or check that events arrive (the live view) and that the "
    "nightly rollup ran (the health panel)."
)
GOAL_FILTER = "Converting visitors of the goal {name}, by their first session of the day (settled days only)"
GOAL_FILTER_ELSEWHERE = (
    "This table is not filtered by the goal: referrers, referrer types, UTM tags, entry pages, countries, "
    "browsers, OS and devices are."
)
NO_GOAL_SOURCES = (
    "No converting visitor of this goal on the settled days of this range: today and days not rolled up "
    "count once the nightly rollup has run."
)
NO_RISING = (
    "Nothing is rising right now: a page or referrer shows up here when its last 10 minutes clearly beat its "
    "usual level over the 3 hours before (it needs at least 30 minutes of this site's traffic to judge)."
)
NO_ROLLUPS = (
    "No day of this site is rolled up yet. The nightly rollup runs from Celery beat; run one now with "
    "`manage.py rollup --from <day> --to <day>`."
)
NO_DRIFT = "No reconciliation yet: it is recorded after each rollup of a day still inside the realtime window."
NO_INVALID = "No invalid events: every event that reached the log was valid."
UNAVAILABLE_PUBLIC = "These numbers are unavailable right now (the problem was logged). Try again in a few minutes."
HEALTH_SIGNED_IN = "The health panel is for signed-in users. Sign in to see the pipeline's state."


def where(url: object) -> str:
    """``url`` without its user name and password: a service address safe to show (pure)."""
    parts = urlsplit(str(url))
    if not parts.scheme or not parts.hostname:
        return str(url) if "@" not in str(url) else "(address hidden)"
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def problem(exc: BaseException, cfg: object = None, *, public: bool = False) -> str:
    """One sentence for a failed query: what is wrong and what to do.

    ``public`` (a share-link visitor, not signed in) gets no service names or addresses:
    they cannot act on them, and the deployment's layout is not theirs to read. Addresses
    shown to signed-in users never carry credentials (:func:`where`). The local stack's
    commands are suggested only when ``cfg`` is in development mode.
    """
    if isinstance(exc, QueryError):
        return f"The query was refused ({exc.parameter}: {exc}). Change the range or filter and try again."
    if public:
        return UNAVAILABLE_PUBLIC
    store = failed_store(exc)
    development = getattr(cfg, "environment", None) == DEVELOPMENT_ENV
    if store == "redis":
        at = where(getattr(cfg, "redis_url", "REDIS_URL"))
        return (
            f"Redis ({at}) is not answering, so live numbers are unavailable: "
            f"{_what_to_do('redis', 'Redis', 'REDIS_URL', development)}."
        )
    if store == "mongo":
        at = where(getattr(cfg, "mongo_url", "MONGO_URL"))
        return (
            f"MongoDB ({at}) is not answering, so settled days are unavailable: "
            f"{_what_to_do('mongo', 'MongoDB', 'MONGO_URL', development)}."
        )
    if store == "kafka":
        at = getattr(cfg, "kafka_bootstrap_servers", "KAFKA_BOOTSTRAP_SERVERS")
        return (
            f"Kafka ({where(at) if '@' in str(at) else at}) is not answering, so consumer lag is unknown: "
            f"{_what_to_do('kafka', 'Kafka', 'KAFKA_BOOTSTRAP_SERVERS', development)}."
        )
    return (
        f"Something went wrong ({type(exc).__name__}); it was logged on the server. "
        "Reload the page; if it persists, see the web process's log."
    )


def _what_to_do(service: str, name: str, variable: str, development: bool) -> str:
    if development:
        return f"{START_STACK.format(service=service)}, or check {variable}"
    return CHECK_SERVICE.format(name=name, variable=variable)


# Goals and funnels: who can define them, and where.
NO_GOALS = "No goals are defined for this site yet."
NO_FUNNELS = "No funnels are defined for this site yet."
HOW_TO_DEFINE_STAFF = (
    "Define goals and funnels in the Django admin (links above), or through the API: "
    "POST /api/v1/sites/{site}/goals (and …/funnels) with an API key that has the manage scope "
    "(`manage.py create_api_key {site} --name <name> --scope read --scope manage`)."
)
HOW_TO_DEFINE = (
    "Staff define them in the Django admin, or anyone with an API key of this site that has the manage scope: "
    "POST /api/v1/sites/{site}/goals (and …/funnels)."
)
NO_PROPERTIES = (
    "No property of this event was counted on the settled days of this range: properties are listed once "
    "their day is rolled up, and only events sent with properties have any."
)

# The Alerts page.
ALERTS_SIGNED_IN = (
    "The Alerts page is for signed-in users granted this site (a share link shows traffic only). "
    "Sign in, or ask an administrator to grant you the site."
)
ALERTS_CHOOSE_SITE = "Choose a site granted to you."
NO_OPEN_EPISODES = "Nothing is firing: no rule of this site has an open episode."
NO_PAST_EPISODES = "No episode of this site has resolved yet."
NO_RULES = "No alert rule for this site yet."
NO_CHANNELS = "No channel yet: add an email address or a webhook, then pick it in a rule."
NO_SUBSCRIPTIONS = "Nobody receives this site's weekly or monthly report yet."
ALERTS_READ_ONLY = (
    "You can see this site's alert settings but not change them: that takes the Django permissions "
    "to add, change or delete alert rules, channels and report subscriptions (ask an administrator)."
)
ALERTS_REFUSED = "Not allowed: changing this needs the “{permission}” permission (ask an administrator)."
ALERTS_NOTHING_SELECTED = "Select one or more rows first."
ALERTS_CONFIRM_DELETE = {
    "rule": "Delete the selected rules, with their episodes and delivery log? This cannot be undone.",
    "channel": "Delete the selected channels? Rules stop notifying them. This cannot be undone.",
    "subscription": "Delete the selected report subscriptions? This cannot be undone.",
}
WEBHOOK_CREATED = (
    "Channel “{name}” created. Its requests are signed with HMAC-SHA256 under this secret, shown once here "
    "(staff can read it again in the admin): {secret}"
)
