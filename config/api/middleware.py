import contextvars
import logging
import secrets

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
        try:
            response = self.get_response(request)
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
        if state is not None:
            response["X-RateLimit-Limit"] = str(state.limit)
            response["X-RateLimit-Remaining"] = str(state.remaining)
            response["X-RateLimit-Reset"] = str(state.reset_seconds)
        return response
