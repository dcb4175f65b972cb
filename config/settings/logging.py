"""Logs and error tracking (docs/configuration.md LOG_FORMAT, LOG_LEVEL, SENTRY_DSN): one line
per request, a request id that follows the request into its Celery tasks, optional Sentry.
"""

from django.core.exceptions import ImproperlyConfigured
from django_guid.integrations import CeleryIntegration as GuidCeleryIntegration

from config.settings.env import env

LOG_FORMATS = ("plain", "json")


def log_format_from_env(default: str) -> str:
    value = env.str("LOG_FORMAT", default=default).strip().lower()
    if value not in LOG_FORMATS:
        raise ImproperlyConfigured(f"LOG_FORMAT must be one of {LOG_FORMATS}, not {value!r}.")
    return value


# Attributes some records carry that are objects, not facts for a log line: Django's `request`
# (django.request, django.server) would be rendered with its path and query string.
JSON_LOG_OMITTED_ATTRS = ("request", "server_time", "color_message", "taskName")


def _json_formatter() -> dict:
    from pythonjsonlogger.core import RESERVED_ATTRS

    return {
        "()": "pythonjsonlogger.json.JsonFormatter",
        "fmt": "%(asctime)s %(levelname)s %(name)s %(request_id)s %(message)s",
        "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        "reserved_attrs": [*RESERVED_ATTRS, *JSON_LOG_OMITTED_ATTRS],
    }


# The formatters of LOGGING (base.py): both carry the request id, `-` outside any request or
# task (core.api.middleware.RequestIdLogFilter). The extra fields of a record (the request
# line's route, status, ...) are JSON members; plain lines show the message only.
LOG_FORMATTERS = {
    "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
    "json": _json_formatter(),
}


LOG_FORMAT = log_format_from_env("plain")

# django-guid keeps the request id (core.api.middleware.RequestIdMiddleware sets it) and its
# Celery integration copies it into the headers of every task published while it is set; the
# worker makes it current for the task's log lines (and for the tasks that task publishes).
# A task published outside a request (beat) gets a fresh id. django-guid's own middleware is not
# used (it would adopt an incoming X-Request-Id); the header name here is only the key of the
# Celery message header.
DJANGO_GUID = {
    "GUID_HEADER_NAME": "X-Request-Id",
    "INTEGRATIONS": [GuidCeleryIntegration()],
}

SENTRY_DSN = env.str("SENTRY_DSN", default="").strip()
SENTRY_ENVIRONMENT = env.str("SENTRY_ENVIRONMENT", default="production")


def _sentry_tag_request_id(event, hint):
    from django_guid import get_guid

    request_id = get_guid()
    if request_id:
        event.setdefault("tags", {})["request_id"] = request_id
    return event


def sentry_init(dsn: str) -> None:
    """Errors of requests (got_request_exception, django.request) and tasks go to Sentry,
    tagged with the request id, and nothing that may hold a secret does."""
    import sentry_sdk
    from sentry_sdk.integrations.celery import CeleryIntegration
    from sentry_sdk.integrations.django import DjangoIntegration

    sentry_sdk.init(
        dsn=dsn,
        environment=SENTRY_ENVIRONMENT,
        integrations=[DjangoIntegration(), CeleryIntegration()],
        # No user, cookies, client IP or Authorization header.
        send_default_pii=False,
        # Bodies hold passwords, webhook signing secrets and tokens (login, channels, OAuth).
        max_request_body_size="never",
        # Frame locals hold raw API keys and tokens while they are being checked.
        include_local_variables=False,
        before_send=_sentry_tag_request_id,
        # Errors only; performance tracing is a separate decision (sampling, cost).
        traces_sample_rate=None,
    )


if SENTRY_DSN:
    sentry_init(SENTRY_DSN)
