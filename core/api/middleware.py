import logging
import re
import secrets
import time
from io import BytesIO
from urllib.parse import quote

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream
from django.utils.deprecation import MiddlewareMixin
from django_guid import clear_guid, set_guid
from django_guid.log_filters import CorrelationId

# One INFO line per request (RequestIdMiddleware), stamped with its request id.
access_logger = logging.getLogger("storefront.requests")


class RequestIdMiddleware:
    """Gives each request a `req_...` id: in the envelope, the X-Request-Id header, the logs,
    and the Celery tasks it schedules (django-guid carries it; config/settings/logging.py).

    The id is always ours: an incoming X-Request-Id is ignored. A client choosing the id could
    give its requests the id of someone else's (mixing their stories in the logs and in a
    support conversation) or flood the logs with lookalikes; the client quotes the id we send.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.request_id = "req_" + secrets.token_urlsafe(18)
        set_guid(request.request_id)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            # Logged while the id is current, so the line carries it (docs/design.md "Errors").
            _access_log(request, response, duration_ms=(time.perf_counter() - started) * 1000)
        finally:
            clear_guid()
        response["X-Request-Id"] = request.request_id
        return response


class RequestBodyLimitMiddleware(MiddlewareMixin):
    """413 for a body over DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MiB), before anything reads it.

    Django enforces the limit only where the body is read (request.body, request.POST), by
    raising RequestDataTooBig wherever that happens: a DRF view answered it as a 500 (reported
    to error tracking), and a form view, the CSRF check or the admin as a 400 logged at ERROR on
    `django.security`. Here the size is known before any of them runs, for every path: the
    envelope for the API, the OAuth error object on every OAuth endpoint (the consent form's
    too), an HTML page elsewhere.

    A body without Content-Length is chunked (HTTP/1.1). Django's WSGI request reads no body
    then (it reads CONTENT_LENGTH bytes), so such a body would reach views empty. When the
    server delimits the input (`wsgi.input_terminated`, as gunicorn does) it is read here, up to
    one byte past the limit, and handed to Django with its real length.
    """

    def process_request(self, request):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and _body_length(request, limit) > limit:
            return body_too_large(request, limit)
        return None


def _body_length(request, limit: int) -> int:
    """The declared length, or that of a chunked body read up to `limit + 1` bytes."""
    meta = request.META
    try:
        return int(meta.get("CONTENT_LENGTH") or "")
    except ValueError:
        pass
    chunked = "chunked" in meta.get("HTTP_TRANSFER_ENCODING", "").lower()
    if not (chunked and meta.get("wsgi.input_terminated") and "wsgi.input" in meta):
        return 0
    body = meta["wsgi.input"].read(limit + 1)
    meta["CONTENT_LENGTH"] = str(len(body))
    # WSGIRequest made its stream from CONTENT_LENGTH when it was built (0 bytes then).
    request._stream = LimitedStream(BytesIO(body), len(body))
    return len(body)


def body_too_large(request, limit: int):
    # Imported here: this module is imported by the logging setup, before the apps are ready.
    from django.http import JsonResponse

    from core.api.views import OAUTH_URL_NAMES, error_response, is_oauth_protocol_path

    message = f"The request body exceeds the limit of {limit} bytes."
    if is_oauth_protocol_path(request, OAUTH_URL_NAMES):
        # RFC 6749 §5.2's object: the envelope is for rate limits and server errors only there
        # (docs/design.md "Errors").
        body = {"error": "invalid_request", "error_description": message}
        return JsonResponse(body, status=413, headers={"Cache-Control": "no-store"})
    return error_response(request, "request_too_large", message, param="body")


_NAMED_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)")


def route_of(request) -> str | None:
    """The URL pattern that served the request, ids as `<name>`: `/api/v1/coupons/<id>`
    (the one value for every coupon, where the path would be one per coupon); None when no
    route matched (the API's catch-all 404 is no route either)."""
    match = request.resolver_match
    if match is None or match.url_name == "api-not-found":
        return None
    return "/" + _NAMED_GROUP.sub(r"<\1>", match.route).strip("^$").replace("\\", "")


# What a request that matched no route shows of its path: percent-encoded (one line whatever
# it holds), no query string, and no longer than this.
UNMATCHED_PATH_SHOWN = 200


def unmatched_path(request) -> str:
    return quote(request.path, safe="/:@!$&'()*+,;=-._~%")[:UNMATCHED_PATH_SHOWN]


def _access_log(request, response, *, duration_ms: float) -> None:
    """The request line. Only what identifies the operation and its outcome: the route name,
    not the path (ids, query values) and never headers or bodies (credentials, secrets). A
    request that matched no route has no route to name: its path is shown instead, so that a
    mistyped URL can be found in the log."""
    route = route_of(request)
    path = unmatched_path(request) if route is None else None
    # A DRF response carries the DRF request: its store was resolved by StorePermission.
    drf_request = (getattr(response, "renderer_context", None) or {}).get("request")
    credential = getattr(request, "auth", None)
    store = getattr(drf_request, "store", None) if drf_request is not None else None
    fields = {
        "method": request.method,
        "route": route,
        "path": path,
        "view": request.resolver_match.view_name if request.resolver_match else None,
        "status": response.status_code,
        "duration_ms": round(duration_ms, 1),
        "credential_kind": getattr(credential, "type", None),
        "credential_id": (
            getattr(credential, "api_key_id", None) or getattr(credential, "access_token_id", None)
        ),
        "store_id": getattr(store, "pk", None),
    }
    access_logger.info(
        "%s %s %s %.1fms",
        request.method,
        route or path,
        response.status_code,
        duration_ms,
        extra=fields,
    )


class RequestIdLogFilter(CorrelationId):
    """django-guid's filter, as the record's `request_id`; `-` outside any request or task."""

    def __init__(self):
        super().__init__(correlation_id_field="request_id")

    def filter(self, record):
        super().filter(record)
        if record.request_id is None:
            record.request_id = "-"
        return True


class RateLimitHeadersMiddleware(MiddlewareMixin):
    """Copies the rate-limit state the throttle left on the request into X-RateLimit-* headers."""

    def process_response(self, request, response):
        state = getattr(request, "rate_limit_state", None)
        # A 429 of another limit carries only Retry-After (core.api.errors.RateLimited).
        if state is not None and not getattr(response, "omit_rate_limit_headers", False):
            response["X-RateLimit-Limit"] = str(state.limit)
            response["X-RateLimit-Remaining"] = str(state.remaining)
            response["X-RateLimit-Reset"] = str(state.reset_seconds)
        return response


class AllowHeaderMiddleware(MiddlewareMixin):
    """`Allow` names only the methods a DRF view serves (RFC 9110 §10.2.1).

    DRF lists OPTIONS for every APIView (the class has an options() method), also on the 405
    that OPTIONS gets when metadata is off (REST_FRAMEWORK DEFAULT_METADATA_CLASS None), so
    the header would advertise the very method it refuses. One place for every view.
    """

    def process_response(self, request, response):
        if getattr(request, "_options_not_served", False) and response.has_header("Allow"):
            methods = [m.strip() for m in response["Allow"].split(",")]
            response["Allow"] = ", ".join(m for m in methods if m and m.upper() != "OPTIONS")
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        # `cls` and `initkwargs` are set by DRF's APIView.as_view() (this module is imported by
        # the logging setup, before DRF may be imported, hence no isinstance check).
        view_class = getattr(view_func, "cls", None)
        if view_class is not None and hasattr(view_class, "metadata_class"):
            initkwargs = getattr(view_func, "initkwargs", {})
            if initkwargs.get("metadata_class", view_class.metadata_class) is None:
                request._options_not_served = True
        return None


class DatabaseRefusalMiddleware(MiddlewareMixin):
    """What DRF's exception handler does for the API (core/api/errors.py), for every other view
    (the admin, the sign-in and consent pages): a statement PostgreSQL stopped at the request's
    timeout, or a transaction it ended for a concurrent one, is a 503 with Retry-After (the
    envelope or the 503 page), not a 500."""

    def process_exception(self, request, exception):
        from core.api.errors import database_refusal
        from core.api.views import error_response

        refusal = database_refusal(exception)
        if refusal is None:
            return None
        response = error_response(
            request,
            refusal.code,
            refusal.message,
            page_message="The database is busy; nothing was saved. Try again in a moment.",
        )
        response["Retry-After"] = str(refusal.retry_after)
        return response
