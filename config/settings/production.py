"""Production: refuses to start without what a shared, internet-facing deployment needs.

`python manage.py check --deploy` passes with these settings and the environment of
docs/production.md (tests/config/test_settings.py runs it).
"""

from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from config.settings.base import *  # noqa: F403
from config.settings.base import (
    CSRF_COOKIE_SECURE,
    HASHED_STATIC_FILES_STORAGE,
    INSECURE_DEFAULT_SECRET_KEY,
    LOGGING,
    REDIS_URL,
    REST_FRAMEWORK,
    SECRET_KEY,
    SECRET_KEY_FALLBACKS,
    SESSION_COOKIE_SECURE,
    STORAGES,
    WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS,
)
from config.settings.env import env

DEBUG = False


def _weak(key: str) -> bool:
    """The bar of Django's deploy checks (security.W009, W025): 50 characters, 5 distinct."""
    return (
        key == INSECURE_DEFAULT_SECRET_KEY
        or len(key) < 50
        or len(set(key)) < 5
        or key.startswith("django-insecure-")
    )


if _weak(SECRET_KEY):
    raise ImproperlyConfigured(
        "Production needs SECRET_KEY set to a random value of at least 50 characters. "
        "(Production is the default settings module; for local development export "
        "DJANGO_SETTINGS_MODULE=config.settings.dev or use `make run`.)"
    )
# A key being rotated out keeps its signatures valid (docs/production.md "Rotating
# SECRET_KEY"): a weak one would keep forgeries valid as long.
if any(_weak(key) for key in SECRET_KEY_FALLBACKS):
    raise ImproperlyConfigured(
        "Production needs every key of SECRET_KEY_FALLBACKS to be a random value of at least "
        "50 characters (the previous SECRET_KEY while it is rotated out)."
    )

# The OAuth issuer (RFC 8414 §2: an https URL), the root of every link and of the API docs'
# server: base.py's default (http://127.0.0.1:8000) would publish a wrong issuer to every client.
_base_url = env.str("BASE_URL", default="")
_parts = urlsplit(_base_url)
if _parts.scheme != "https" or not _parts.hostname or _parts.query or _parts.fragment:
    raise ImproperlyConfigured(
        "Production needs BASE_URL set to the service's public https root (e.g. "
        "https://api.example.com): it is the OAuth issuer and the root of every link; "
        + (f"got {_base_url!r}." if _base_url else "it is not set.")
    )

# No default: a wildcard would let any Host header build absolute URLs (password-reset links,
# pagination links) and pass the CSRF origin check.
ALLOWED_HOSTS = [host.strip() for host in env.list("ALLOWED_HOSTS", default=[])]
ALLOWED_HOSTS = [host for host in ALLOWED_HOSTS if host]
if not ALLOWED_HOSTS or "*" in ALLOWED_HOSTS:
    raise ImproperlyConfigured(
        "Production needs ALLOWED_HOSTS: the comma-separated host names this service answers "
        "(e.g. api.example.com); '*' is refused."
    )

# Rate limits, sign-in limits, single-use consent tokens and the Celery broker must be shared by
# every process; the file cache and broker of `make run` are per machine.
if not REDIS_URL:
    raise ImproperlyConfigured(
        "Production needs REDIS_URL (e.g. redis://redis:6379/0): rate limits, sign-in limits "
        "and the Celery broker are shared between processes through it."
    )

# HTTPS only. Behind a proxy that terminates TLS and redirects plain HTTP itself,
# SECURE_SSL_REDIRECT=false leaves that to the proxy; HSTS stays on either way.
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
# Load balancers probe over plain HTTP and do not follow redirects; Prometheus scrapes each
# instance directly (gunicorn speaks no TLS). /metrics answers only its allow-list or token and
# redirects anyone else like any path (core/operations/metrics/views.py; docs/production.md
# "Metrics").
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^status$", r"^metrics$"]
SECURE_HSTS_SECONDS = env.count("SECURE_HSTS_SECONDS", default=365 * 24 * 3600)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=True)
# X-Forwarded-Proto is believed only behind trusted proxies (NUM_PROXIES > 0), the nearest of
# which must overwrite it; without a proxy a client could claim HTTPS over plain HTTP.
if REST_FRAMEWORK["NUM_PROXIES"] > 0:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Compressed, content-hashed files from STATIC_ROOT (config/settings/static.py): run
# `collectstatic` before starting (the image does it at build time); without its manifest every
# page that links an asset fails.
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": HASHED_STATIC_FILES_STORAGE}}
WHITENOISE_AUTOREFRESH = False
WHITENOISE_USE_FINDERS = False

SILENCED_SYSTEM_CHECKS = [
    # RFC 9700 §2.1 discourages plain-http redirect URIs, but the CLI is a native app whose
    # callback is the loopback address on http (RFC 8252 §7.3, §8.3); oauth_cli.authorize
    # accepts no other http redirect URI. Every other DOT and Django deploy check stays live.
    "oauth2_provider.W008",
]

# `make run`'s opt-ins that production accepts (our own acceptance runs serve plain HTTP on
# loopback to local receivers): every process names each in a WARNING at start
# (core/operations/deploy_checks.py) and /status lists them; `check --deploy` fails on them.
DEVELOPMENT_OPT_INS = [
    name
    for name, on in (
        ("WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS", WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS),
        ("SECURE_COOKIES=false", not (SESSION_COOKIE_SECURE and CSRF_COOKIE_SECURE)),
    )
    if on
]

# One JSON object per line for the log pipeline, unless LOG_FORMAT=plain.
LOG_FORMAT = log_format_from_env("json")  # noqa: F405
LOGGING = {
    **LOGGING,
    "handlers": {"console": {**LOGGING["handlers"]["console"], "formatter": LOG_FORMAT}},
}
