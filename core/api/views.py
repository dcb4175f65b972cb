import contextlib
import functools

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.template import loader
from django.urls import NoReverseMatch, reverse
from django.views.decorators.csrf import csrf_exempt

from core.api.errors import ERROR_CODES, json_error, request_id_of
from core.api.ratelimit import address_rate_limited
from core.operations import health


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


# The OAuth protocol endpoints answer JSON to programs (RFC 6749 §5.2, RFC 8414); the
# authorization endpoint is the consent page, for browsers.
OAUTH_PROTOCOL_URL_NAMES = ("oauth-token", "oauth-revoke", "oauth-metadata")
# Every OAuth endpoint, the authorization endpoint included: one shape for one condition, their
# 413 is the RFC 6749 §5.2 object, as the authorization endpoint's 405 is
# (docs/decisions/hardening.md "The consent form's 413 is the OAuth error object").
OAUTH_URL_NAMES = (*OAUTH_PROTOCOL_URL_NAMES, "oauth-authorize")


def is_oauth_protocol_path(request, names=OAUTH_PROTOCOL_URL_NAMES) -> bool:
    protocol_paths = set()
    for name in names:
        with contextlib.suppress(NoReverseMatch):
            protocol_paths.add(reverse(name))
    return request.path in protocol_paths


def answers_json(request) -> bool:
    """Whether an error on this path is JSON (the API and the OAuth protocol endpoints) or an
    HTML page (the admin, the sign-in and consent pages, anything else)."""
    path = request.path_info
    return path == "/api" or path.startswith("/api/") or is_oauth_protocol_path(request)


def error_response(
    request, code: str, message: str | None = None, page_message: str = "", param=None
):
    """The envelope where errors are JSON (answers_json), else the HTML page of its status."""
    if answers_json(request):
        return json_error(request, code, message, param)
    # Rendered without the request (no context processors), as Django's own server_error
    # page is: the error page must not fail for the reason the request did.
    status_code = ERROR_CODES[code].status
    context = {"request_id": request_id_of(request), "message": page_message}
    page = loader.render_to_string(f"{status_code}.html", context)
    return HttpResponse(page, status=status_code)


def _error_handler(code: str, message: str | None = None):
    """A Django error handler (handler400 ... handler500 in config/urls.py)."""

    def handler(request, exception=None):
        return error_response(request, code, message)

    return handler


not_found = csrf_exempt(_error_handler("resource_not_found", "No such endpoint or resource."))
bad_request = _error_handler("bad_request")
permission_denied = _error_handler("forbidden")
server_error = _error_handler("api_error")


def csrf_failure(request, reason=""):
    return error_response(
        request,
        "forbidden",
        f"CSRF verification failed: {reason}",
        "The form could not be verified (CSRF). Reload the page, with cookies enabled, and "
        "submit it again.",
    )


@require_get
def error_docs(request):
    """The page every `docs_url` points at: one anchor per error code."""
    return render(request, "docs/errors.html", {"codes": ERROR_CODES.values()})


@require_get
def healthz(request):
    """Liveness: the process serves requests. Touches nothing external, so an outage of the
    database or Redis never gets healthy web processes restarted; that is /readyz's job."""
    return JsonResponse({"status": "ok"})


def _probe_response(request, endpoint: str, checks: dict) -> JsonResponse:
    limited = address_rate_limited(
        request, f"probe:{endpoint}", settings.HEALTH_RATE_LIMIT_PER_MINUTE
    )
    if limited is not None:
        return limited
    healthy, results = health.run_checks(checks)
    failing = [name for name, result in results.items() if result["status"] not in health.PASSING]
    response = JsonResponse(
        {"status": "ok" if healthy else "failing", "failing": failing, "checks": results},
        status=200 if healthy else 503,
    )
    response["Cache-Control"] = "no-store"
    # Not Django's ERROR per 5xx: core.operations.health logs a failing check once, when it starts
    # failing.
    response._has_been_logged = True
    return response


@require_get
def readyz(request):
    """Readiness: the database answers with every migration applied, the cache and the broker
    answer. 503 names the failing parts; the load balancer stops sending traffic meanwhile."""
    return _probe_response(request, "readyz", health.READINESS_CHECKS)


@require_get
def status(request):
    """For operators and alerting: readiness plus the heartbeats of beat and of each queue's
    workers, and the webhook backlog. Not a readiness probe: a silent beat or an unconsumed
    queue must page someone, not take the web out of service."""
    return _probe_response(request, "status", health.STATUS_CHECKS)
