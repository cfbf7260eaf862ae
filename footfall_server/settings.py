"""Django settings for Footfall: a thin mapping of :mod:`footfall.config` onto Django names.

Nothing here reads ``os.environ`` directly (it sets one default: Arrow's allocator); every
value comes from the validated :class:`footfall.config.Config`, so a bad variable stops the
process at start with a message that names it.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from footfall.config import ConfigError, load_config
from footfall_server.celery_schedule import SCHEDULE

# Arrow allocates from jemalloc in Footfall's processes, which hands freed memory back to the
# system; pyarrow's default here, mimalloc, keeps it per thread, so a web process that had
# streamed an export held on to its peak for good. pyarrow reads this when it first allocates
# (after this module); an operator's own value wins.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")

BASE_DIR = Path(__file__).resolve().parent.parent
# A checkout keeps its local data in ./var; an installed package (no manage.py beside it)
# must not write into site-packages, so its defaults go to the user's data directory.
CHECKOUT = BASE_DIR if (BASE_DIR / "manage.py").is_file() and (BASE_DIR / "pyproject.toml").is_file() else None

try:
    FOOTFALL = load_config(os.environ, CHECKOUT)
except ConfigError as exc:
    raise ImproperlyConfigured(f"Footfall configuration error: {exc}") from exc

DEBUG = FOOTFALL.debug
SECRET_KEY = FOOTFALL.secret_key
# Rotation: the old key here while what it signed is still in use (docs/operations.md).
SECRET_KEY_FALLBACKS = list(FOOTFALL.secret_key_fallbacks)
ALLOWED_HOSTS = list(FOOTFALL.allowed_hosts)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    # Labelled footfall_<folder> (see each apps.py); footfall itself is footfall_core.
    "footfall",
    "collector",
    "realtime",
    "archive",
    "historical",
    "query",
    "api",
    "dashboard",
    "alerts",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files (admin, Swagger UI) answered from STATIC_ROOT before anything else runs.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Beacons (POST /collect, GET /p.gif) answered before sessions, auth, CSRF and URL
    # resolution, which they never need: same views, same answers, half the server time.
    "collector.middleware.BeaconMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "footfall_server.urls"
# The dashboard lives behind Django's login (dashboard/views.py forwards to the Dash app).
LOGIN_URL = "dashboard:login"
LOGIN_REDIRECT_URL = "/dashboard/"
LOGOUT_REDIRECT_URL = "dashboard:login"
WSGI_APPLICATION = "footfall_server.wsgi.application"
ASGI_APPLICATION = "footfall_server.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": FOOTFALL.database}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Password sign-ins (dashboard, admin) are throttled per account and per address before the
# password is checked: footfall/login_throttle.py.
AUTHENTICATION_BACKENDS = ["footfall.login_throttle.ThrottledModelBackend"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"  # storage is UTC; each site's zone is applied at query time
USE_I18N = True
USE_TZ = True

# `manage.py collectstatic` copies every app's files (admin, Swagger UI) here; WhiteNoise
# serves them from every web process, so no separate file server is needed.
STATIC_URL = "static/"
STATIC_ROOT = FOOTFALL.static_root
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "UNAUTHENTICATED_USER": None,
    # API keys only: DRF's defaults (Basic and session auth) would make every API view a
    # password oracle without a throttle, and let a signed-in browser call the API by cookie.
    "DEFAULT_AUTHENTICATION_CLASSES": ["api.auth.ApiKeyAuthentication"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Footfall API",
    "DESCRIPTION": (
        "Clickstream analytics of your sites: time series, breakdowns, referrer flows, realtime and totals. "
        "Settled days come from the exact nightly rollups, recent minutes from the realtime counters; every "
        "answer says which in `sources`. Authenticate with `Authorization: Bearer <api key>`."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and docs describe the API, no data: they take no credentials at all (so a
    # password sent to them is never checked), and the docs' "Authorize" asks for an API key.
    "SERVE_AUTHENTICATION": [],
    "SWAGGER_UI_DIST": "SIDECAR",  # served by this app: a self-hosted product needs no CDN
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # One name for the metric choices (a parameter and a response field share them); without
    # it the schema check warns (drf_spectacular.W001), so `check --deploy` is not clean.
    # Goals, alert rules and channels each have a `kind` of their own choices: one name each.
    "ENUM_NAME_OVERRIDES": {
        "MetricEnum": "footfall.vocabulary.METRICS",
        "GoalKindEnum": ["page", "event"],
        "AlertRuleKindEnum": "alerts.models.RULE_KINDS",
        "ChannelKindEnum": ["email", "webhook"],
    },
}

# The cache holds the API's per-key rate-limit counters, shared by every web process; it
# has a Redis database of its own so flushing realtime counters never touches it.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": FOOTFALL.cache_url,
        "KEY_PREFIX": "ff:cache",
        "TIMEOUT": 300,
    }
}

# Celery reads every CELERY_* name below (see footfall_server/celery_app.py).
CELERY_BROKER_URL = FOOTFALL.celery_broker_url
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TIMEZONE = "UTC"
# A task whose ETA lies beyond the visibility timeout is redelivered and runs twice;
# nightly jobs are scheduled by beat (no long ETAs), and 12 h covers the longest backfill.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 12 * 3600}
CELERY_BEAT_SCHEDULE = SCHEDULE

# Alert and report emails (footfall.config.Email, from EMAIL_URL).
DEFAULT_FROM_EMAIL = FOOTFALL.email.sender
SERVER_EMAIL = FOOTFALL.email.sender
if FOOTFALL.email.backend == "file":
    EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    EMAIL_FILE_PATH = str(FOOTFALL.email.path)
elif FOOTFALL.email.backend == "console":
    EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
else:
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    EMAIL_HOST = FOOTFALL.email.host
    EMAIL_PORT = FOOTFALL.email.port
    EMAIL_HOST_USER = FOOTFALL.email.user
    EMAIL_HOST_PASSWORD = FOOTFALL.email.password
    EMAIL_USE_TLS = FOOTFALL.email.starttls
    EMAIL_USE_SSL = FOOTFALL.email.ssl
    EMAIL_TIMEOUT = 30

# Alert deliveries (alerts/delivery.py): attempts per message, the wait after the first
# failed one (doubled after each, with jitter: 30 s, 1 min, 2 min, 4 min), and how long a
# webhook receiver may take to answer.
ALERT_DELIVERY_ATTEMPTS = 5
ALERT_DELIVERY_BACKOFF_SECONDS = 30.0
ALERT_WEBHOOK_TIMEOUT_SECONDS = 10.0
# Networks beyond the public internet that webhooks may reach; None: any address (alerts.egress).
ALERT_WEBHOOK_ALLOWED_NETWORKS = FOOTFALL.webhook_allowed_networks

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": "INFO"},
    "loggers": {
        "django": {"level": "INFO", "propagate": True},
        # httpx and httpcore log every request at INFO with its full URL: a webhook's URL may be
        # its credential (Slack's are). Deliveries are logged by alerts.delivery, by channel.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
    },
}

if not DEBUG:
    if FOOTFALL.trusted_proxies:  # only a proxy in front may say the request came over TLS
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SECURE_HSTS_SECONDS = 31536000
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
