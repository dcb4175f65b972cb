import contextvars
import logging
import secrets
import time

# One INFO line per request, stamped with its request id by RequestIdLogFilter.
access_logger = logging.getLogger("storefront.requests")
_current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


def new_request_id() -> str:
    return "req_" + secrets.token_urlsafe(18)


class RequestIdMiddleware:
    """Gives each request a `req_...` id: in the envelope, the X-Request-Id header, the logs."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.request_id = new_request_id()
        token = _current_request_id.set(request.request_id)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            # Logged while the id is current, so the line carries it (DESIGN.md "Errors"). The
            # path without its query string: query values are the client's, not the log's.
            access_logger.info(
                "%s %s %s %.1fms",
                request.method,
                request.path,
                response.status_code,
                (time.perf_counter() - started) * 1000,
            )
        finally:
            _current_request_id.reset(token)
        response["X-Request-Id"] = request.request_id
        return response


class RequestIdLogFilter(logging.Filter):
    def filter(self, record):
        record.request_id = _current_request_id.get()
        return True


class RateLimitHeadersMiddleware:
    """Copies the rate-limit state the throttle left on the request into X-RateLimit-* headers."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        state = getattr(request, "rate_limit_state", None)
        # A 429 of another limit carries only Retry-After (config.api.errors.RateLimited).
        if state is not None and not getattr(response, "omit_rate_limit_headers", False):
            response["X-RateLimit-Limit"] = str(state.limit)
            response["X-RateLimit-Remaining"] = str(state.remaining)
            response["X-RateLimit-Reset"] = str(state.reset_seconds)
        return response


class AllowHeaderMiddleware:
    """`Allow` names only the methods a DRF view serves (RFC 9110 §10.2.1).

    DRF lists OPTIONS for every APIView (the class has an options() method), also on the 405
    that OPTIONS gets when metadata is off (REST_FRAMEWORK DEFAULT_METADATA_CLASS None), so
    the header would advertise the very method it refuses. One place for every view.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
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
