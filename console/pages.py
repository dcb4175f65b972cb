"""How every console page answers: signed in, in a chosen store, with the same headers, and
with a service's domain error (core/api/errors.py) shown on the page with its status.

Views stay thin: they read with a selector, or call one service inside `submit`, which
redirects on success (no double submit on reload) and otherwise renders the form's page again
with the error next to its field and the error's status (422, 403, 409, 429 with Retry-After,
503 with Retry-After). Nothing here decides a business rule.
"""

import functools

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from console.access import console_store
from core.api.errors import ApiError, ValidationFailed

# No inline style or script anywhere: the stylesheet and the copy button's script are files
# served by WhiteNoise from this origin.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


def protect(response):
    """Anti-framing, no caching of account data (a new secret included), no referrer leaks."""
    response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response["X-Frame-Options"] = "DENY"
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "same-origin"
    response["X-Content-Type-Options"] = "nosniff"
    return response


def render_page(request, template: str, context: dict, *, error: ApiError | None = None):
    """The page, with `error` (if any) at the top and beside its fields, and its status."""
    context = {
        **context,
        "error": error,
        "field_errors": (error.errors or {}) if isinstance(error, ValidationFailed) else {},
        "console": getattr(request, "console", None),
    }
    response = render(request, template, context, status=error.status if error else 200)
    if error is not None:
        for name, value in error.headers.items():
            response[name] = value
    return protect(response)


def console_view(*, needs_store: bool = True, permission: str | None = None):
    """A console page: sign-in required (the sign-in page and its limits), GET/HEAD/POST only,
    `request.console` the chosen store (a member without one is sent to the stores page), and
    `permission` (e.g. `webhook:read`) required to see it at all. A domain error the view
    lets through is the error page with its status."""

    def decorate(view):
        @login_required
        @require_http_methods(["GET", "HEAD", "POST"])
        @functools.wraps(view)
        def wrapped(request, *args, **kwargs):
            request.console = console_store(request)
            if needs_store and request.console is None:
                return redirect("console:stores")
            try:
                if permission is not None:
                    request.console.require(permission)
                return view(request, *args, **kwargs)
            except ApiError as error:
                return render_page(request, "console/error.html", {}, error=error)

        return wrapped

    return decorate


def submit(request, action, *, page, success_url):
    """Runs `action()` (one service call) and redirects to `success_url`, or to
    `success_url(result)` when it is callable; a domain error renders `page(error)` instead."""
    try:
        result = action()
    except ApiError as error:
        return page(error)
    return redirect(success_url(result) if callable(success_url) else success_url)


def validated(serializer_class, data, **context) -> dict:
    """`data` checked by the API's own request serializer (so the API's format rules apply),
    as a ValidationFailed (422) naming the fields when it fails."""
    payload = serializer_class(data=data, context=context)
    if not payload.is_valid():
        raise ValidationFailed(_messages(payload.errors))
    return payload.validated_data


def _messages(detail) -> dict[str, list[str]]:
    found = {}
    for name, messages in detail.items():
        if isinstance(messages, dict):  # a list field's per-item errors
            messages = [m for ms in messages.values() for m in ms]
        found[name] = [str(m) for m in messages]
    return found


def form_errors(form) -> ValidationFailed:
    """A Django form's errors as the 422 the services raise."""
    return ValidationFailed({name: [str(m) for m in ms] for name, ms in form.errors.items()})
