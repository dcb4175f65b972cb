"""The authorization endpoint in /api/schema/: the consent page a browser is sent to, and the
consent form's answers (approve, refuse). How it is attached: oauth_cli/schema.py."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import AllowAny, IsAuthenticated

from oauth_cli.schema import (
    CLI,
    COMMON_ERRORS,
    EXAMPLE_AUTH_TOKEN,
    EXAMPLE_CSRF_TOKEN,
    EXAMPLE_STATE,
    FORM,
    HTML,
    MALFORMED_OR_PROTOCOL_ERROR,
    NO_STORE,
    TOO_LARGE,
    ProtocolEndpoint,
    form_example,
    header,
    oauth_error,
)
from oauth_cli.serializers import (
    AuthorizeQuerySerializer,
    ConsentApprovalFormSerializer,
    ConsentRefusalFormSerializer,
)

CONSENT_PAGE_EXAMPLE = (
    "<!DOCTYPE html><html><head><title>Connect the Storefront CLI</title></head><body>"
    "<h1>Connect the Storefront CLI to your account?</h1>"
    '<form method="post"><input type="hidden" name="auth_token" value="…">'
    '<button type="submit">Approve</button>'
    '<button type="submit" name="_method" value="DELETE">Refuse</button></form>'
    "</body></html>"
)


ANSWER_RESPONSES = {
    303: OpenApiResponse(
        description="Back to the CLI's callback: `code` and `state` (approved), or "
        "`error=access_denied` and `state` (refused); both with `iss`, the issuer (RFC 9207)."
    ),
    **oauth_error(
        "`invalid_request`: unknown, used or expired `auth_token`, another user's, or a "
        "`client_id`/`state` that differs from the authorization request.",
        html=True,
        body=MALFORMED_OR_PROTOCOL_ERROR,
    ),
    **oauth_error("`access_denied`: no signed-in browser session.", html=True, status=401),
    **oauth_error(
        "`invalid_request`: CSRF token (`_token`) missing or wrong.", html=True, status=403
    ),
    **TOO_LARGE,
    **COMMON_ERRORS,
    **oauth_error(
        "`temporarily_unavailable`: the answer could not be recorded as used.",
        html=True,
        status=503,
    ),
}
ANSWER_HEADERS = [
    header("Location", str, [303], "Where the browser goes next."),
    header("Cache-Control", NO_STORE, [303], "Never cached."),
]


class AuthorizeEndpoint(ProtocolEndpoint):
    authentication_classes = [SessionAuthentication]

    def get_permissions(self):
        # The consent page answers anonymous browsers too (with the sign-in redirect).
        return [AllowAny()] if self.request.method == "GET" else [IsAuthenticated()]

    @extend_schema(
        operation_id="oauth_authorize",
        summary="Consent page of the authorization request (RFC 6749 §4.1.1)",
        description="Opened by the CLI in the user's browser. A signed-in browser gets the "
        "consent page; an anonymous one is sent to sign in first. Only the official CLI's "
        "client id, a loopback `/callback` redirect URI and S256 PKCE are accepted.",
        parameters=[
            AuthorizeQuerySerializer,
            header("Content-Security-Policy", str, [200], "No script."),
            header("X-Frame-Options", {"type": "string", "enum": ["DENY"]}, [200]),
            header("Referrer-Policy", {"type": "string", "enum": ["same-origin"]}, [200]),
            header("Cache-Control", NO_STORE, [200, 303], "Never cached."),
            header("Location", str, [302, 303], "Where the browser goes next."),
        ],
        responses={
            (200, HTML): OpenApiResponse(
                OpenApiTypes.STR,
                description="The consent page, for a signed-in browser.",
                examples=[
                    OpenApiExample(
                        "consent page",
                        value=CONSENT_PAGE_EXAMPLE,
                        media_type=HTML,
                        response_only=True,
                        status_codes=["200"],
                    )
                ],
            ),
            302: OpenApiResponse(
                description="To the sign-in page (anonymous browser, then back here), or to "
                "the callback with `error`, `error_description`, `state` and `iss` (RFC 9207) "
                "when a rule after client and redirect URI fails (RFC 6749 §4.1.2.1)."
            ),
            303: OpenApiResponse(
                description="To the callback with `error`, `state` and `iss`, for an error "
                "django-oauth-toolkit finds after our checks (e.g. an empty scope: "
                "`invalid_scope`)."
            ),
            **oauth_error(
                "Not redirected (RFC 6749 §4.1.2.1): `invalid_request` (client_id or "
                "redirect_uri missing, repeated or not a loopback callback) or `invalid_client`.",
                html=True,
            ),
            **COMMON_ERRORS,
        },
    )
    def get(self, request):
        raise NotImplementedError  # served by oauth_cli.views.CliAuthorizationView

    @extend_schema(
        operation_id="oauth_authorize_approve",
        summary="Approve the consent page (or refuse with `_method=DELETE`)",
        description="The consent page's Approve button: the browser is sent back to the CLI's "
        "loopback callback with a single-use code, `state` and `iss`.",
        request={FORM: ConsentApprovalFormSerializer},
        responses=ANSWER_RESPONSES,
        parameters=ANSWER_HEADERS,
        examples=[
            form_example(
                "approve",
                {
                    "auth_token": EXAMPLE_AUTH_TOKEN,
                    "client_id": CLI,
                    "state": EXAMPLE_STATE,
                    "_token": EXAMPLE_CSRF_TOKEN,
                },
            )
        ],
    )
    def post(self, request):
        raise NotImplementedError

    @extend_schema(
        operation_id="oauth_authorize_refuse",
        summary="Refuse the consent page",
        description="The consent page's Refuse button: the browser is sent back to the CLI's "
        "callback with `error=access_denied`, `state` and `iss`; nothing is granted.",
        request={FORM: ConsentRefusalFormSerializer},
        responses=ANSWER_RESPONSES,
        parameters=ANSWER_HEADERS,
        examples=[
            form_example("refuse", {"auth_token": EXAMPLE_AUTH_TOKEN, "_token": EXAMPLE_CSRF_TOKEN})
        ],
    )
    def delete(self, request):
        raise NotImplementedError
