"""OAuth protocol endpoints for the official CLI: thin subclasses of DOT's views.

Protocol errors, wrong methods included, are `{error, error_description}` (RFC 6749 §5.2);
rate limits and server errors use the business envelope (docs/design.md "Errors").
"""

import logging
import secrets

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.http import HttpResponse, JsonResponse, QueryDict
from django.middleware.csrf import CsrfViewMiddleware
from django.shortcuts import render
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.debug import sensitive_post_parameters
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.oauth2_backends import _add_iss_to_redirect
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.signals import app_authorized
from oauth2_provider.views import AuthorizationView, RevokeTokenView, TokenView
from oauth2_provider.views.mixins import OAuthLibMixin

from core.api.fields import too_long_message
from core.api.ratelimit import address_rate_limited
from core.operations import metrics
from oauth_cli.authorize import (
    AuthTokenStoreUnavailable,
    authorize_request_error,
    pending_authorization_create,
    pending_authorization_take,
)
from oauth_cli.inputs import (
    AUTHORIZE_QUERY_FIELDS,
    CONSENT_FORM_FIELDS,
    REVOKE_FORM_FIELDS,
    TOKEN_FORM_FIELDS,
    overlong_in_forms,
    overlong_input,
)
from oauth_cli.selectors import cli_application

logger = logging.getLogger(__name__)

# What the consent page's answer replays of its authorization request (kept with the auth_token).
AUTHORIZATION_REQUEST_FIELDS = (
    "client_id",
    "redirect_uri",
    "state",
    "code_challenge",
    "code_challenge_method",
)


def rate_limited_response(request, endpoint: str):
    """Per client address budget on the protocol endpoints (docs/design.md "Limits and rate
    limits"); None when within it."""
    return address_rate_limited(request, f"oauth:{endpoint}", settings.OAUTH_RATE_LIMIT_PER_MINUTE)


def oauth_error(request, error: str, description: str, status: int = 400):
    """A non-redirectable protocol error: JSON, or the same as a page for a browser."""
    if "text/html" in request.headers.get("Accept", ""):
        body = {"error": error, "error_description": description}
        return protected_page(request, "oauth_cli/error.html", status=status, **body)
    return protocol_error(error, description, status)


def protocol_error(error: str, description: str, status: int = 400) -> JsonResponse:
    """RFC 6749 §5.2's object, never cached: the token and revocation endpoints' only form."""
    body = {"error": error, "error_description": description}
    return JsonResponse(body, status=status, headers={"Cache-Control": "no-store"})


def method_not_allowed(request, allowed) -> HttpResponse:
    """405 with `Allow`, as a protocol error (spec "Errors" rule 3), not the envelope."""
    allow = ", ".join(allowed)
    description = f"{request.method} is not allowed here; use {allow}."
    response = oauth_error(request, "invalid_request", description, 405)
    response["Allow"] = allow
    return response


class OAuthMethodNotAllowedMixin:
    def http_method_not_allowed(self, request, *args, **kwargs):
        return method_not_allowed(request, self._allowed_methods())


def _protect_page(
    response, *, nonce: str | None, form_target: str = "", referrer_policy: str = "no-referrer"
):
    """Anti-clickjacking and leak-free headers for pages the browser shows."""
    style = f"'nonce-{nonce}'" if nonce else "'none'"
    response["Content-Security-Policy"] = (
        f"default-src 'none'; style-src {style}; img-src 'none'; script-src 'none'; "
        f"form-action 'self' {form_target}".rstrip()
        + "; frame-ancestors 'none'; base-uri 'none'"
    )
    response["X-Frame-Options"] = "DENY"
    response["Referrer-Policy"] = referrer_policy
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response


def with_issuer(location: str, request) -> str:
    """`location` with RFC 9207's `iss`. DOT adds it to the code redirect only; the discovery
    document says every authorization response carries it, so error redirects (refused,
    invalid request) carry it too, added by DOT's own function."""
    issuer = oauth2_settings.oauth2_authorization_server_issuer(request)
    return _add_iss_to_redirect(location, issuer)


def discovery_document(base: str) -> dict:
    """RFC 8414 authorization server metadata for the service at `base`; also the source of
    its OpenAPI schema and example (oauth_cli/schema_cli.py)."""
    return {
        "issuer": base,
        "authorization_endpoint": f"{base}/oauth/authorize",
        "token_endpoint": f"{base}/oauth/token",
        "revocation_endpoint": f"{base}/oauth/revoke",
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": [settings.OAUTH_SCOPE_ADMIN],
        "authorization_response_iss_parameter_supported": True,
    }


@csrf_exempt  # changes nothing: an unsafe method gets the 405, not the CSRF check's 403
def authorization_server_metadata(request):
    """RFC 8414 discovery document."""
    if request.method not in ("GET", "HEAD"):
        return method_not_allowed(request, ["GET", "HEAD"])
    limited = rate_limited_response(request, "metadata")
    if limited:
        return limited
    document = discovery_document(settings.BASE_URL)
    return JsonResponse(document, headers={"Cache-Control": "public, max-age=3600"})


@method_decorator(csrf_exempt, name="dispatch")  # checked below against the `_token` field
class CliAuthorizationView(OAuthMethodNotAllowedMixin, AuthorizationView):
    """GET (and HEAD) shows the consent page; POST approves, DELETE (or `_method=DELETE`)
    refuses."""

    template_name = "oauth_cli/consent.html"
    http_method_names = ["get", "head", "post", "delete"]

    def dispatch(self, request, *args, **kwargs):
        limited = rate_limited_response(request, "authorize")
        if limited:
            return limited
        # The method first: a wrong one is a 405 whoever asks, signed in or not.
        if request.method.lower() not in self.http_method_names:
            return self.http_method_not_allowed(request, *args, **kwargs)
        # Length first (oauth_cli/inputs.py): oauthlib reads the query on every method.
        overlong = overlong_in_forms(AUTHORIZE_QUERY_FIELDS, request.GET)
        if request.method in ("GET", "HEAD"):
            error = authorize_request_error(request.GET, overlong=overlong)
            if error is not None:
                return self._authorize_error(request, error)
        elif overlong:
            return oauth_error(
                request, "invalid_request", too_long_message(*next(iter(overlong.items())))
            )
        elif not request.user.is_authenticated:
            return oauth_error(request, "access_denied", "Sign in before answering.", 401)
        return super().dispatch(request, *args, **kwargs)

    def _authorize_error(self, request, error):
        if error.redirect_uri is None:
            return oauth_error(request, error.error, error.description, 400)
        query = QueryDict(mutable=True)
        query.update({"error": error.error, "error_description": error.description})
        if error.state is not None:
            query["state"] = error.state
        location = with_issuer(f"{error.redirect_uri}?{query.urlencode()}", request)
        response = self.redirect(location, application=None)
        response.status_code = 302  # a GET's redirect, not an answer to the consent form
        return response

    def redirect(self, redirect_to, application):
        """DOT's redirects (code, access_denied): 303 after the consent form (docs/design.md
        "OAuth")."""
        response = super().redirect(redirect_to, application)
        response.status_code = 303
        response["Referrer-Policy"] = "no-referrer"
        response["Cache-Control"] = "no-store"
        return response

    def error_response(self, error, application, **kwargs):
        """Redirectable errors go back to the client; fatal ones are shown, never redirected."""
        redirect, error_response = OAuthLibMixin.error_response(self, error)
        if redirect:
            return self.redirect(with_issuer(error_response["url"], self.request), application)
        oauthlib_error = error_response["error"]
        return oauth_error(
            self.request,
            oauthlib_error.error,
            oauthlib_error.description or "",
            oauthlib_error.status_code,
        )

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["auth_token"] = pending_authorization_create(
            self.request.session,
            user_id=self.request.user.pk,
            request_data={
                # DOT always passes client_id, redirect_uri and state; PKCE's two when sent.
                **{name: kwargs.get(name, "") for name in AUTHORIZATION_REQUEST_FIELDS},
                "scopes": list(kwargs["scopes"]),
            },
        )
        context["csp_nonce"] = secrets.token_urlsafe(16)
        return context

    def render_to_response(self, context, **response_kwargs):
        response = super().render_to_response(context, **response_kwargs)
        origin = context["redirect_uri"].removesuffix("/callback")
        # Chrome applies form-action to the redirect after the post, and drops IPv6 literals
        # from source lists as invalid, so an [::1] callback can only be allowed as `http:`.
        form_target = "http:" if origin.startswith("http://[") else origin
        # same-origin, not no-referrer: under no-referrer browsers post `Origin: null`, which
        # Django's CSRF check rightly refuses (docs/design.md "OAuth"); nothing leaves the site.
        return _protect_page(
            response,
            nonce=context["csp_nonce"],
            form_target=form_target,
            referrer_policy="same-origin",
        )

    def post(self, request, *args, **kwargs):
        allow = request.POST.get("_method", "").upper() != "DELETE"
        return self._answer(request, request.POST, allow=allow)

    def delete(self, request, *args, **kwargs):
        form_body = request.content_type in ("", "application/x-www-form-urlencoded")
        form = QueryDict(request.body) if form_body else QueryDict()
        return self._answer(request, form, allow=False)

    def _csrf_failure(self, request, form) -> bool:
        """Django's own CSRF check (cookie, origin, referer), reading the token from `_token`."""
        request.META[settings.CSRF_HEADER_NAME] = form.get("_token", "")
        return CsrfViewMiddleware(lambda r: None).process_view(request, None, (), {}) is not None

    def _answer(self, request, form, *, allow: bool):
        refusal = overlong_input(request, CONSENT_FORM_FIELDS, form)
        if refusal is not None:
            return oauth_error(request, "invalid_request", refusal)
        if self._csrf_failure(request, form):
            return oauth_error(
                request, "invalid_request", "CSRF token (_token) missing or incorrect.", 403
            )
        try:
            entry, problem = pending_authorization_take(request.session, form.get("auth_token", ""))
        except AuthTokenStoreUnavailable:
            logger.exception("consent: cannot record the auth_token as used")
            return oauth_error(
                request,
                "temporarily_unavailable",
                "The answer could not be recorded; start again from the CLI in a moment.",
                503,
            )
        if entry is None:
            return oauth_error(request, "invalid_request", problem)
        if entry["user_id"] != request.user.pk:
            return oauth_error(
                request, "invalid_request", "The auth_token belongs to another sign-in."
            )
        for field in ("client_id", "state"):
            given = form.get(field)
            if (allow and not given) or (given is not None and given != entry[field]):
                return oauth_error(
                    request, "invalid_request", f"{field} does not match the authorization request."
                )
        application = cli_application()
        if application is None:
            return oauth_error(request, "invalid_client", "Unknown client_id.")
        credentials = {"response_type": "code"}
        credentials |= {name: entry[name] for name in AUTHORIZATION_REQUEST_FIELDS}
        # The Installation is written with the code, in its transaction (validator's
        # save_authorization_code): a refused or failed issue leaves no connection behind.
        try:
            uri, _headers, _body, _status = self.create_authorization_response(
                request=request,
                scopes=" ".join(entry["scopes"]),
                credentials=credentials,
                allow=allow,
            )
        except OAuthToolkitError as error:
            return self.error_response(error, application)
        return self.redirect(uri, application)


class CliTokenView(OAuthMethodNotAllowedMixin, TokenView):
    """RFC 6749 §4.1.3 and §6, with PKCE (RFC 7636) and rotation; per-IP rate limit."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        limited = rate_limited_response(request, "token")
        if limited:
            return limited
        # oauthlib reads the query as well as the form.
        refusal = overlong_input(
            request, TOKEN_FORM_FIELDS, request.GET, request.POST, authorization=True
        )
        if refusal is not None:
            response = protocol_error("invalid_request", refusal)
        else:
            response = super().post(request, *args, **kwargs)
        metrics.oauth_token_answered(request, response)
        # Errors raised while issuing (e.g. a lost rotation race) come without oauthlib's
        # default headers; every answer of this endpoint is JSON and never cached.
        response["Content-Type"] = "application/json"
        response["Cache-Control"] = "no-store"
        return response

    @method_decorator(sensitive_post_parameters("password", "client_secret"))
    def authorization_flow_token_response(self, request, *args, **kwargs):
        """DOT's, minus its re-read of the issued access token (one query per 200) when no
        receiver of `app_authorized` would get it; with one connected, DOT's own runs."""
        if app_authorized.has_listeners(self):  # DOT sends it with sender=self
            return super().authorization_flow_token_response(request, *args, **kwargs)
        _url, headers, body, status = self.create_token_response(request)
        return HttpResponse(content=body, status=status, headers=headers)


class CliRevokeTokenView(OAuthMethodNotAllowedMixin, RevokeTokenView):
    """RFC 7009; answers `[]` on success, unknown tokens included."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        limited = rate_limited_response(request, "revoke")
        if limited:
            return limited
        refusal = overlong_input(
            request, REVOKE_FORM_FIELDS, request.GET, request.POST, authorization=True
        )
        if refusal is not None:
            return protocol_error("invalid_request", refusal)
        response = super().post(request, *args, **kwargs)
        if response.status_code == 200:
            return JsonResponse([], safe=False, headers={"Cache-Control": "no-store"})
        if not response.get("Content-Type", "").startswith("application/json"):
            response["Content-Type"] = "application/json"
        return response


class CliLoginView(LoginView):
    """The browser sign-in the consent page sends anonymous users to (then back via `next`)."""

    redirect_authenticated_user = False

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["csp_nonce"] = secrets.token_urlsafe(16)
        return context

    def render_to_response(self, context, **response_kwargs):
        response = super().render_to_response(context, **response_kwargs)
        # same-origin, not no-referrer: the sign-in POST must carry a real Origin for CSRF.
        return _protect_page(response, nonce=context["csp_nonce"], referrer_policy="same-origin")


def locked_out_response(request, original_response=None, credentials=None):
    """django-axes' answer when a sign-in limit is reached (AXES_LOCKOUT_CALLABLE), on both
    sign-in pages: 429, the same page whichever limit it was and whether the username exists."""
    seconds = int(settings.AXES_COOLOFF_TIME.total_seconds())
    return protected_page(
        request,
        "registration/locked_out.html",
        status=429,
        retry_after=seconds,
        lockout_minutes=-(-seconds // 60),
    )


def protected_page(
    request, template: str, *, status: int, retry_after: int | None = None, **context
):
    """A page of the sign-in flow's own (an error, a lockout, an outage) with its status and
    Retry-After, styled like the sign-in and consent pages (one nonce'd style block)."""
    context["csp_nonce"] = secrets.token_urlsafe(16)
    response = render(request, template, context, status=status)
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return _protect_page(response, nonce=context["csp_nonce"])
