import functools
import logging

from django.core.cache import cache
from django.db import connection
from django.http import JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt

from config.api.errors import ERROR_CODES, json_error

logger = logging.getLogger(__name__)


def require_get(view):
    """Like Django's require_GET, but the 405 is the error envelope.

    CSRF-exempt: the view changes nothing, and an unsafe method must get the 405 with `Allow`,
    not the CSRF middleware's 403 (found by the contract run: QUERY on the discovery document).
    """

    @csrf_exempt
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.method not in ("GET", "HEAD"):
            return json_error(request, "method_not_allowed", headers={"Allow": "GET, HEAD"})
        return view(request, *args, **kwargs)

    return wrapper


class EnvelopeMethodNotAllowedMixin:
    """For Django class-based views: a method the view does not serve is the envelope's 405
    with `Allow`, instead of Django's empty one (what `require_get` does for functions)."""

    def http_method_not_allowed(self, request, *args, **kwargs):
        allow = ", ".join(self._allowed_methods())
        return json_error(request, "method_not_allowed", headers={"Allow": allow})


@csrf_exempt
def not_found(request, exception=None):
    return json_error(request, "resource_not_found", "No such endpoint or resource.")


def csrf_failure(request, reason=""):
    return json_error(request, "forbidden", f"CSRF verification failed: {reason}")


def server_error(request):
    return json_error(request, "api_error")


def bad_request(request, exception=None):
    return json_error(request, "bad_request")


def permission_denied(request, exception=None):
    return json_error(request, "forbidden")


@require_get
def error_docs(request):
    """The page every `docs_url` points at: one anchor per error code."""
    return render(request, "docs/errors.html", {"codes": ERROR_CODES.values()})


@require_get
def healthz(request):
    checks = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception:
        logger.exception("health check: database unavailable")
        checks["database"] = "unavailable"
    try:
        cache.set("healthz", "ok", timeout=5)
        checks["cache"] = "ok" if cache.get("healthz") == "ok" else "unavailable"
    except Exception:
        logger.warning("health check: cache (Redis) unavailable", exc_info=True)
        checks["cache"] = "unavailable"
    healthy = checks["database"] == "ok"
    return JsonResponse(
        {
            "status": "ok"
            if healthy and checks["cache"] == "ok"
            else ("degraded" if healthy else "unavailable"),
            "checks": checks,
        },
        status=200 if healthy else 503,
    )
