"""The one error envelope (spec "Errors"), and the domain errors services raise.

Services raise `ApiError` subclasses; `api_exception_handler` (DRF) and the Django handlers
below turn every error under /api/ into the same body. No view builds an error body by hand.
"""

import math
from dataclasses import dataclass

from django.conf import settings
from django.core import signals
from django.core.exceptions import PermissionDenied
from django.db import connections
from django.http import Http404, JsonResponse
from django.utils.log import log_response
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

from core.database.connections import statement_timed_out, transaction_ended_for_another


@dataclass(frozen=True)
class ErrorCode:
    status: int
    type: str
    code: str
    description: str


# Every code the API answers with; /docs/errors renders this table.
ERROR_CODES: dict[str, ErrorCode] = {
    e.code: e
    for e in [
        ErrorCode(
            400,
            "invalid_request_error",
            "bad_request",
            "The request is malformed: unparseable JSON, a body that is not an object, "
            "a missing required header or a tampered cursor.",
        ),
        ErrorCode(
            401,
            "authentication_error",
            "unauthenticated",
            "No credential, or an unknown, revoked or expired one.",
        ),
        ErrorCode(
            403,
            "authorization_error",
            "forbidden",
            "The credential lacks the ability, the role lacks the permission, or the "
            "store named by X-STORE is not accessible.",
        ),
        ErrorCode(
            404,
            "not_found_error",
            "resource_not_found",
            "No such resource in the selected store (other stores' resources are not revealed).",
        ),
        ErrorCode(
            405,
            "invalid_request_error",
            "method_not_allowed",
            "The path does not support this HTTP method.",
        ),
        ErrorCode(
            406, "invalid_request_error", "not_acceptable", "The API answers application/json only."
        ),
        ErrorCode(
            409,
            "conflict_error",
            "conflict",
            "The resource state changed before the request, an Idempotency-Key was "
            "reused with a different request or is still in flight, or a cursor belongs "
            "to another store or filter set.",
        ),
        ErrorCode(
            410,
            "invalid_request_error",
            "cursor_expired",
            "The cursor points before the 30-day retention window; restart without it.",
        ),
        ErrorCode(
            413,
            "invalid_request_error",
            "request_too_large",
            "The request body is larger than the service accepts (2.5 MiB by default); the "
            "message gives the limit in bytes.",
        ),
        ErrorCode(
            415,
            "invalid_request_error",
            "unsupported_media_type",
            "The request body must be application/json.",
        ),
        ErrorCode(
            422,
            "validation_error",
            "validation_failed",
            "One or more fields or parameters are invalid; `errors` names each.",
        ),
        ErrorCode(
            429,
            "rate_limit_error",
            "rate_limit_exceeded",
            "Too many requests; wait for the seconds given by Retry-After.",
        ),
        ErrorCode(
            500,
            "api_error",
            "api_error",
            "Something failed on our side. Retry later; quote the request_id.",
        ),
        ErrorCode(
            503,
            "api_error",
            "service_unavailable",
            "The service is at a bound of its own capacity for this request right now (a "
            "database statement ran past the request's limit, or too many outbound calls are "
            "in flight); retry after the seconds given by Retry-After.",
        ),
    ]
}


class ApiError(Exception):
    """A domain error with its envelope code; subclasses fix the code."""

    code = "api_error"

    def __init__(
        self,
        message: str | None = None,
        *,
        param: str | None = None,
        errors: dict[str, list[str]] | None = None,
        headers: dict | None = None,
        extra: dict | None = None,
    ):
        self.message = message or ERROR_CODES[self.code].description
        self.param = param
        self.errors = errors
        self.headers = headers or {}
        # Members added to the envelope (the event endpoints' 410 `fallback`).
        self.extra = extra or {}
        super().__init__(self.message)

    @property
    def status(self) -> int:
        return ERROR_CODES[self.code].status


class BadRequest(ApiError):
    code = "bad_request"


class Unauthenticated(ApiError):
    code = "unauthenticated"


class Forbidden(ApiError):
    code = "forbidden"


class NotFound(ApiError):
    code = "resource_not_found"


class Conflict(ApiError):
    code = "conflict"


class CursorExpired(ApiError):
    code = "cursor_expired"


class RateLimited(ApiError):
    """429 with Retry-After. `credential_budget` says the per-credential request budget refused
    the request; only then does the 429 carry X-RateLimit-* (they describe that budget, and
    would count what is left of it on a 429 of another limit, such as store creation's)."""

    code = "rate_limit_exceeded"

    def __init__(
        self, retry_after: int, message: str | None = None, *, credential_budget: bool = False
    ):
        retry_after = max(1, int(retry_after))
        super().__init__(message, headers={"Retry-After": str(retry_after)})
        self.retry_after = retry_after
        self.credential_budget = credential_budget


class ServiceUnavailable(ApiError):
    """503 with Retry-After: a bound of the service's own capacity refused the request (it
    may be answered later)."""

    code = "service_unavailable"

    def __init__(self, retry_after: float, message: str | None = None):
        retry_after = max(1, math.ceil(retry_after))
        super().__init__(message, headers={"Retry-After": str(retry_after)})
        self.retry_after = retry_after


class ValidationFailed(ApiError):
    """422 naming the bad fields: `ValidationFailed.field("slug", "is taken")`."""

    code = "validation_failed"

    def __init__(
        self, errors: dict[str, list[str]], message: str | None = None, param: str | None = None
    ):
        first_field = next(iter(errors), None)
        param = param or first_field
        if message is None and first_field is not None:
            message = f"{first_field}: {errors[first_field][0]}"
        super().__init__(message, param=param, errors=errors)

    @classmethod
    def field(cls, name: str, message: str) -> "ValidationFailed":
        return cls({name: [message]})


def request_id_of(request) -> str:
    return getattr(request, "request_id", None) or "req_unknown"


def error_body(
    code: str,
    request,
    message: str | None = None,
    param: str | None = None,
    errors: dict | None = None,
) -> dict:
    spec = ERROR_CODES[code]
    body = {
        "type": spec.type,
        "code": spec.code,
        "message": message or spec.description,
        "status": spec.status,
        "param": param,
        "request_id": request_id_of(request),
        "docs_url": f"{settings.BASE_URL}/docs/errors#{spec.code}",
    }
    if errors is not None:
        body["errors"] = errors
    return body


def _flatten_drf_detail(detail) -> dict[str, list[str]]:
    if isinstance(detail, dict):
        return {
            str(field): [str(m) for m in (msgs if isinstance(msgs, list) else [msgs])]
            for field, msgs in detail.items()
        }
    if isinstance(detail, list):
        return {"non_field_errors": [str(m) for m in detail]}
    return {"non_field_errors": [str(detail)]}


def _from_drf(exc: drf_exceptions.APIException) -> ApiError:
    detail = exc.detail
    if isinstance(exc, drf_exceptions.ValidationError):
        return ValidationFailed(_flatten_drf_detail(detail))
    if isinstance(exc, drf_exceptions.ParseError):
        return BadRequest(f"Malformed request body: {detail}", param="body")
    if isinstance(exc, (drf_exceptions.NotAuthenticated, drf_exceptions.AuthenticationFailed)):
        return Unauthenticated(str(detail))
    if isinstance(exc, drf_exceptions.PermissionDenied):
        return Forbidden(
            str(detail) if detail != drf_exceptions.PermissionDenied.default_detail else None
        )
    if isinstance(exc, drf_exceptions.NotFound):
        return NotFound()
    if isinstance(exc, drf_exceptions.Throttled):
        return RateLimited(exc.wait or 1, credential_budget=True)
    if exc.default_code in ERROR_CODES:
        # DRF's codes that are ours too: method_not_allowed, not_acceptable,
        # unsupported_media_type.
        error = ApiError(str(detail))
        error.code = exc.default_code
        return error
    if 400 <= exc.status_code < 500:
        return BadRequest(str(detail))
    return ApiError()


def _rollback_open_transactions() -> None:
    for connection in connections.all(initialized_only=True):
        if connection.in_atomic_block:
            connection.set_rollback(True)


def database_refusal(exc: BaseException) -> ServiceUnavailable | None:
    """The 503 for a request PostgreSQL refused, or None for any other error. A statement
    stopped past the request's timeout (core/database/connections.py): the database is busier
    than a request may wait for, so the client waits about as long and retries. A transaction
    ended so that a concurrent one could go on (a deadlock, a serialization failure): nothing of
    it was saved, and the same request sent again goes through (an Idempotency-Key keeps a
    retried write single)."""
    if statement_timed_out(exc):
        message = "A database statement of this request ran past its time limit; retry later."
        return ServiceUnavailable(settings.DATABASE_STATEMENT_TIMEOUT_SECONDS, message)
    if transaction_ended_for_another(exc):
        message = "A concurrent change held what this request needed; nothing was saved. Retry."
        return ServiceUnavailable(1, message)
    return None


def api_error_response(error: ApiError, request) -> Response:
    body = error_body(error.code, request, error.message, error.param, error.errors)
    body.update(error.extra)
    return Response(body, status=error.status, headers=error.headers)


def api_exception_handler(exc, context):
    """DRF EXCEPTION_HANDLER: every exception becomes the envelope; never a trace."""
    request = context.get("request")
    unexpected = None
    if isinstance(exc, Http404):
        exc = NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = Forbidden()
    elif isinstance(exc, drf_exceptions.APIException):
        exc = _from_drf(exc)
    elif (refusal := database_refusal(exc)) is not None:
        # A transaction still open around the view is aborted: rolled back, never committed,
        # and the connection serves the next request.
        _rollback_open_transactions()
        exc = refusal
    if not isinstance(exc, ApiError):
        unexpected, exc = exc, ApiError()
    response = api_error_response(exc, request)
    if unexpected is not None:
        _report_unexpected(unexpected, request, response)
    if isinstance(exc, Unauthenticated):
        response["WWW-Authenticate"] = "Bearer"
    if isinstance(exc, RateLimited) and not exc.credential_budget:
        # Read by RateLimitHeadersMiddleware: this 429 is not about the request budget.
        response.omit_rate_limit_headers = True
    return response


def _report_unexpected(exc: BaseException, request, response) -> None:
    """What Django does for an exception a view lets through
    (django.core.handlers.exception.response_for_exception): the got_request_exception signal
    (error trackers listen to it) and an ERROR record with the traceback on `django.request`.
    The envelope replaces only the response; the request id is in the record (its `request`,
    and the handlers' RequestIdLogFilter)."""
    django_request = getattr(request, "_request", request)
    signals.got_request_exception.send(sender=None, request=django_request)
    log_response(
        "%s: %s",
        response.reason_phrase,
        getattr(django_request, "path", "-"),
        response=response,
        request=django_request,
        exception=exc,
    )


def json_error(
    request,
    code: str,
    message: str | None = None,
    param: str | None = None,
    headers: dict | None = None,
) -> JsonResponse:
    """The envelope outside DRF views (Django 404/500 handlers, middleware)."""
    body = error_body(code, request, message, param)
    return JsonResponse(body, status=ERROR_CODES[code].status, headers=headers)
