"""Settings shared by every environment, read from environment variables.

Defaults are the zero-setup ones of `make run` (no Redis needed; dev.py gives it its
PostgreSQL); production.py tightens them. Secrets and prints never live here.
"""

from datetime import timedelta

from celery.schedules import crontab

# Every variable is read through `env` (config/settings/env.py): a malformed value stops the
# process at start, naming the variable.
from config.settings.env import BASE_DIR, VAR_DIR, env

INSECURE_DEFAULT_SECRET_KEY = "insecure-storefront-development-key-change-me"
SECRET_KEY = env.str("SECRET_KEY", default=INSECURE_DEFAULT_SECRET_KEY)
# Previous keys, comma-separated, while SECRET_KEY is rotated: what they signed (sessions,
# known-browser cookies, event cursors) stays valid until they are removed (docs/production.md
# "Rotating SECRET_KEY").
SECRET_KEY_FALLBACKS = [key for key in env.list("SECRET_KEY_FALLBACKS", default=[]) if key]
DEBUG = env.bool("DEBUG", default=False)
BASE_URL = env.str("BASE_URL", default="http://127.0.0.1:8000").rstrip("/")
STOREFRONT_DOMAIN = env.str("STOREFRONT_DOMAIN", default="storefront.test")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["*"])
# Session and CSRF cookies only over HTTPS unless SECURE_COOKIES=false (bin/run-dev, plain HTTP).
SESSION_COOKIE_SECURE = env.bool("SECURE_COOKIES", default=True)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    # ReDoc for /api/docs/ as static files, pinned with the package: no CDN at run time.
    "drf_spectacular_sidecar",
    "oauth2_provider",
    # Sign-in failure limits (config/settings/logins.py).
    "axes",
    # The request id and its way into Celery tasks (config/settings/logging.py).
    "django_guid",
    "core.api",
    "accounts",
    "stores",
    "coupons",
    "orders",
    "events",
    "webhooks",
    "oauth_cli",
    # Server-rendered pages for a store's members (docs/console.md).
    "console",
    "django_prometheus",
]

MIDDLEWARE = [
    # First and last (django-prometheus): request counts and latencies of the whole stack.
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "core.api.middleware.RequestIdMiddleware",
    # Before anything reads the body (the CSRF check, forms, DRF): a 413, never a 500.
    "core.api.middleware.RequestBodyLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Right after SecurityMiddleware, as WhiteNoise asks: /static/ (config/settings/static.py).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "core.api.middleware.RateLimitHeadersMiddleware",
    "core.api.middleware.AllowHeaderMiddleware",
    # Sign-in while Redis (the failure counters) is down: a 503 page, not a 500.
    "oauth_cli.login_limits.SignInLimitsUnavailableMiddleware",
    # After a sign-in: the cookie that exempts this browser from strangers' failures.
    "oauth_cli.login_limits.KnownBrowserCookieMiddleware",
    # Last, as django-axes asks: turns a sign-in it refused into the lockout page.
    "axes.middleware.AxesMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
    # A statement past the request's timeout, or a transaction the database ended, in a view
    # outside DRF (the admin, the sign-in pages): a 503, not a 500.
    "core.api.middleware.DatabaseRefusalMiddleware",
    # Innermost: a read whose database connection the server ended runs again
    # (core/database/connections.py).
    "core.database.connections.ReadFailoverMiddleware",
]

# Django's four: passwords set through its forms (admin, createsuperuser, changepassword) are
# not like the user's attributes, at least 8 characters, not common, not all digits.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": f"django.contrib.auth.password_validation.{name}"}
    for name in (
        "UserAttributeSimilarityValidator",
        "MinimumLengthValidator",
        "CommonPasswordValidator",
        "NumericPasswordValidator",
    )
]
# `seed_demo` makes a superuser whose password is "demo": only settings for a machine of one's
# own (dev, test) turn it on; production and anything else built on base refuse it.
SEED_DEMO_ALLOWED = False

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
AUTH_USER_MODEL = "accounts.User"
LOGIN_URL = "/accounts/login/"
CSRF_FAILURE_VIEW = "core.api.views.csrf_failure"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
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

DATABASE_CONN_MAX_AGE = env.count("DATABASE_CONN_MAX_AGE", default=60)
DATABASES = {"default": env.database("DATABASE_URL", conn_max_age=DATABASE_CONN_MAX_AGE)}
# TCP keepalives (libpq's; a `?keepalives_idle=...` in DATABASE_URL wins): a connection to a
# host that vanished (no FIN, no RST) is found dead after about 60 + 6 x 10 s instead of
# Linux's 2 h 11 min, or 2 min with a request unanswered (TCP user timeout), so a worker blocked
# on it errors out and its process is freed (docs/scaling.md).
DATABASES["default"]["OPTIONS"] = {
    "keepalives": 1,
    "keepalives_idle": 60,
    "keepalives_interval": 10,
    "keepalives_count": 6,
    "tcp_user_timeout": 120_000,  # ms
    **DATABASES["default"].get("OPTIONS", {}),
}
# django-prometheus' backend (query, error and connection counts for /metrics) that waits for a
# restarting server (core/database/backend).
DATABASES["default"]["ENGINE"] = "core.database.backend"
# An optional streaming replica for the event journal's and the delivery history's reads
# (core/database/replica.py, docs/decisions/events.md "Reads from a replica"); unset: all on the
# primary. Its connection gives up after 2 s (libpq's connect_timeout; a URL's own wins), and
# reads go to the primary while it is further behind than DATABASE_REPLICA_MAX_LAG_SECONDS.
DATABASE_REPLICA_MAX_LAG_SECONDS = env.seconds("DATABASE_REPLICA_MAX_LAG_SECONDS", 5)
# A replica that did not answer is not asked again for this long (per process).
DATABASE_REPLICA_RETRY_SECONDS = env.seconds("DATABASE_REPLICA_RETRY_SECONDS", 5)
if env.str("DATABASE_REPLICA_URL", default=""):
    _replica = env.database("DATABASE_REPLICA_URL", conn_max_age=DATABASE_CONN_MAX_AGE)
    DATABASES["replica"] = {
        **_replica,
        "ENGINE": DATABASES["default"]["ENGINE"],
        "OPTIONS": {
            **DATABASES["default"]["OPTIONS"],
            "connect_timeout": 2,
            **_replica.get("OPTIONS", {}),
        },
        # Tests read the test database there (pytest-django creates none for it).
        "TEST": {"MIRROR": "default"},
    }
DATABASE_ROUTERS = ["core.database.replica.ReplicaRouter"]
# How long opening a connection keeps trying while PostgreSQL refuses it (a restart, a
# failover): requests wait that long for the server instead of failing at once
# (core/database/connections.py).
DATABASE_CONNECT_RETRY_SECONDS = env.seconds("DATABASE_CONNECT_RETRY_SECONDS", 5)
# How long one statement of a web request may run (core/database/connections.py): PostgreSQL stops
# it and the
# request answers 503 with Retry-After; 0: no limit. Tasks, commands and migrations have none.
DATABASE_STATEMENT_TIMEOUT_SECONDS = env.seconds("DATABASE_STATEMENT_TIMEOUT_SECONDS", 5)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# The per-request plain-SQL reads run as statements prepared once per PostgreSQL session
# (core/database/connections.py). Off by default with DATABASE_CONN_MAX_AGE=0: a connection per
# request has
# nothing to reuse, and that is the setting docs/scaling.md gives for PgBouncer in transaction
# mode, which would lose a session's statements between two transactions.
DATABASE_PREPARED_STATEMENTS = env.bool(
    "DATABASE_PREPARED_STATEMENTS", default=DATABASE_CONN_MAX_AGE != 0
)

REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }
else:
    # Zero-setup default: a cache shared by the web and worker processes without a server.
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
        }
    }

TIME_ZONE = "UTC"

REST_FRAMEWORK = {
    # Bearer tokens (RFC 6750): API keys, then OAuth access tokens, the last one answering for
    # every token the others do not recognise (accounts/authentication.py).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.ApiKeyAuthentication",
        "oauth_cli.authentication.OAuthAccessTokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_THROTTLE_CLASSES": ["core.api.ratelimit.CredentialRateThrottle"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["core.api.parsers.JSONObjectParser"],
    "DEFAULT_SCHEMA_CLASS": "core.api.schema.StorefrontAutoSchema",
    "EXCEPTION_HANDLER": "core.api.errors.api_exception_handler",
    "UNAUTHENTICATED_USER": None,
    # No OPTIONS metadata: OPTIONS answers 405 like any method a path does not document.
    "DEFAULT_METADATA_CLASS": None,
    # Trusted reverse proxies in front of the app; core.api.client_address reads it for every
    # per-address limit. 0: X-Forwarded-For is ignored.
    "NUM_PROXIES": env.count("NUM_PROXIES", default=0),
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Storefront API",
    "DESCRIPTION": "Commerce API of Storefront: accounts and stores, coupons, event journal, "
    "webhook deliveries. Errors use one envelope; see /docs/errors.",
    "VERSION": "2.0.0",
    # Where the API answers: generated clients take it as their default base URL.
    "SERVERS": [{"url": BASE_URL, "description": "This Storefront deployment."}],
    "CONTACT": {"name": "Storefront API documentation", "url": f"{BASE_URL}/api/docs/"},
    # One entry per tag the operations use, in the order the docs show them.
    "TAGS": [
        {"name": "me", "description": "The account behind the credential."},
        {"name": "permissions", "description": "What a credential may do in a store."},
        {"name": "stores", "description": "The stores a credential can access."},
        {"name": "coupons", "description": "A store's coupons (v1, Laravel-style pages)."},
        {"name": "events", "description": "The store's event journal, polled with cursors."},
        {"name": "orders", "description": "The events of one order."},
        {"name": "invoices", "description": "A store's invoices."},
        {"name": "webhook-destination", "description": "Where the store's events are pushed."},
        {"name": "webhook-channels", "description": "Where the store's events are pushed."},
        {"name": "webhook-event-types", "description": "The event types a webhook receives."},
        {"name": "webhook-deliveries", "description": "Pushed events: history and replay."},
        {"name": "oauth", "description": "The official CLI's sign-in (OAuth 2.0 + PKCE)."},
    ],
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/api/v[12]",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "CouponTypeEnum": "coupons.models.Coupon.TYPE_CHOICES",
        "EventTypeEnum": "events.registry.EVENT_TYPES",
        "WebhookDeliveryStatusEnum": "webhooks.models.WebhookDelivery.STATUSES",
        "OrderStatusEnum": "orders.models.Order.STATUS_CHOICES",
    },
}

# Per-credential request budget (docs/design.md "Limits and rate limits").
API_RATE_LIMIT_PER_MINUTE = env.count("API_RATE_LIMIT_PER_MINUTE", default=120, minimum=1)
# Store creation: at most one new store per user in this many seconds.
STORE_CREATION_INTERVAL_SECONDS = 60
IDEMPOTENCY_KEY_TTL = timedelta(hours=24)

CLI_CLIENT_ID = env.str("CLI_CLIENT_ID", default="9b2c5f3e-4d1a-4c8e-9f6b-2a7d3e1c5b80")
WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS = env.bool("WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS", default=False)
# `make run`'s relaxations a process reports (production.py lists those turned on): a WARNING
# naming each at start, and /status. The dev and test settings relax on purpose.
DEVELOPMENT_OPT_INS: list[str] = []

# Celery: Redis when REDIS_URL is set; otherwise kombu's filesystem transport, a real broker
# shared by the web, worker and beat processes of `make run` with no server to install.
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS = {}
    if REDIS_URL.startswith("redis://"):
        # kombu's Redis transport, kept by a worker through a Redis restart (config/broker.py).
        CELERY_BROKER_TRANSPORT = "config.broker:Transport"
else:
    _broker_dir = VAR_DIR / "broker"
    # The host means nothing to this transport; without one kombu logs a warning per process.
    CELERY_BROKER_URL = "filesystem://localhost//"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir),
        "data_folder_out": str(_broker_dir),
        "processed_folder": str(_broker_dir / "processed"),
        # Exchange tables (broadcasts); kombu's default is ./control, inside the source tree.
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# Celery's Django fixup closes every DB connection before and after each task unless this is
# set (a new PostgreSQL connection per task); config/celery.py applies CONN_MAX_AGE instead.
CELERY_DB_REUSE_MAX = 100_000
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
API_BEAT_SCHEDULE = {
    "idempotency-keys-prune": {
        "task": "api.idempotency_keys_prune",
        "schedule": crontab(minute="*/15"),
    },
}

# Each area keeps its settings in config/settings/<area>.py.
from config.settings.events import *  # noqa: E402, F403
from config.settings.health import *  # noqa: E402, F403
from config.settings.logging import *  # noqa: E402, F403
from config.settings.logins import *  # noqa: E402, F403
from config.settings.metrics import *  # noqa: E402, F403
from config.settings.oauth import *  # noqa: E402, F403
from config.settings.static import *  # noqa: E402, F403
from config.settings.webhooks import *  # noqa: E402, F403

# The `iss` of authorization responses (RFC 9207) is the issuer of /.well-known (BASE_URL),
# not a value derived from each request's Host header.
OAUTH2_PROVIDER = {**OAUTH2_PROVIDER, "OIDC_ISS_ENDPOINT": BASE_URL}  # noqa: F405

CELERY_BEAT_SCHEDULE = {
    **API_BEAT_SCHEDULE,
    **EVENTS_BEAT_SCHEDULE,  # noqa: F405
    **HEALTH_BEAT_SCHEDULE,  # noqa: F405
    **OAUTH_BEAT_SCHEDULE,  # noqa: F405
    **WEBHOOKS_BEAT_SCHEDULE,  # noqa: F405
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "core.api.middleware.RequestIdLogFilter"}},
    "formatters": LOG_FORMATTERS,  # noqa: F405
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,  # noqa: F405
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django.request": {"level": "ERROR"},
        # Its INFO lines ("setting GUID ...") come with every request and task.
        "django_guid": {"level": "WARNING"},
        # runserver's own line for each request (`make run`) repeats storefront.requests'
        # line without its request id; its errors still show.
        "django.server": {"level": "ERROR"},
    },
}
