"""The OAuth protocol endpoints in /api/schema/ (spec "Discovery and OAuth protocol").

drf-spectacular describes DRF views only, and these are django-oauth-toolkit's and Django's:
each class below is a DRF view that never serves a request, attached to the real view's
callable by `describes` (oauth_cli/urls.py) so the generator finds it at the real path. Its
`extend_schema` and the serializers of oauth_cli/serializers.py are the description: form
bodies, the `{error, error_description}` object of RFC 6749 §5.2, redirects, the consent page,
and the business envelope on 429 and 500.
"""

import copy

from django.conf import settings
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework.authentication import BasicAuthentication, SessionAuthentication
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.views import APIView

from config.api.pagination import EXAMPLE_BASE_URL
from config.api.schema import ERROR, RATE_LIMIT_RESPONSE_HEADERS, RequiredBodySchema
from oauth_cli.serializers import (
    AuthorizationCodeGrantSerializer,
    AuthorizationServerMetadataSerializer,
    AuthorizeQuerySerializer,
    ConsentApprovalFormSerializer,
    ConsentRefusalFormSerializer,
    OAuthErrorSerializer,
    RefreshTokenGrantSerializer,
    RevocationSerializer,
    TokenResponseSerializer,
)
from oauth_cli.views import discovery_document

FORM = "application/x-www-form-urlencoded"
HTML = "text/html"
CLI = settings.CLI_CLIENT_ID


def describes(endpoint: type[APIView], view):
    """`view` (a Django view) as drf-spectacular sees `endpoint`: DRF's own marks of a DRF
    view's callable (`cls`, `initkwargs`), read only by the schema generator."""
    view.cls, view.initkwargs = endpoint, {}
    return view


# What the 429 headers mean here: the budget is per client IP and endpoint, not per credential.
_RATE_LIMIT_HEADER_DESCRIPTIONS = {
    "Retry-After": "Seconds to wait before retrying.",
    "X-RateLimit-Limit": "Requests per minute from one client IP to this endpoint.",
    "X-RateLimit-Remaining": "Requests left in the current window (0).",
    "X-RateLimit-Reset": "Seconds until the current window ends.",
}
RATE_LIMIT_HEADERS = [copy.copy(header) for header in RATE_LIMIT_RESPONSE_HEADERS]
for _header in RATE_LIMIT_HEADERS:
    _header.description = _RATE_LIMIT_HEADER_DESCRIPTIONS[_header.name]


class ProtocolSchema(RequiredBodySchema):
    """The `oauth` tag and the 429 headers of the protocol endpoints' budget; no added 413
    envelope (each operation declares its own 413)."""

    _get_response_bodies = AutoSchema._get_response_bodies

    def get_tags(self):
        return ["oauth"]

    def get_override_parameters(self):
        return [*AutoSchema.get_override_parameters(self), *RATE_LIMIT_HEADERS]

    def _get_request_body(self, direction="request"):
        """DELETE's too: the consent refusal has a form body (drf-spectacular describes the
        bodies of PUT, PATCH and POST only), required like POST's."""
        method = self.method
        self.method = "POST" if method == "DELETE" else method
        try:
            return super()._get_request_body(direction)
        finally:
            self.method = method


class ProtocolEndpoint(APIView):
    schema = ProtocolSchema()
    authentication_classes = []
    permission_classes = [AllowAny]


def oauth_error(
    description: str, *, html: bool = False, status: int = 400, body=OAuthErrorSerializer
) -> dict:
    """`{error, error_description}` (or another `body`); the authorization endpoint shows it as
    a page instead when the request's Accept contains text/html (a browser)."""
    error = OpenApiResponse(body, description=description)
    if not html:
        return {status: error}
    return {(status, "application/json"): error, (status, HTML): OpenApiResponse(OpenApiTypes.STR)}


def header(name: str, schema, statuses, description: str = "") -> OpenApiParameter:
    return OpenApiParameter(
        name,
        schema,
        OpenApiParameter.HEADER,
        response=statuses,
        required=True,
        description=description,
    )


NO_STORE = {"type": "string", "enum": ["no-store"]}
# 429 and 500 are the business envelope on every protocol endpoint (spec "Errors" 3).
COMMON_ERRORS = {429: ERROR, 500: ERROR}
TOO_LARGE = oauth_error("`invalid_request`: the body is over 2.5 MiB.", status=413)
# The consent form's 413 is the error page (config.api.middleware).
TOO_LARGE_PAGE = {(413, HTML): OpenApiResponse(OpenApiTypes.STR, "The 413 page.")}
# 400 is also the envelope's `bad_request` when Django cannot parse the form body at all (a
# multipart body without a boundary), before the view runs. Written as a schema: DRF has no
# serializer for "one of two bodies" that stays inline.
MALFORMED_OR_PROTOCOL_ERROR = {
    "oneOf": [
        {"$ref": "#/components/schemas/OAuthError"},
        {"$ref": "#/components/schemas/ErrorEnvelope"},
    ]
}


class MetadataEndpoint(ProtocolEndpoint):
    @extend_schema(
        operation_id="oauth_authorization_server_metadata",
        summary="Authorization server metadata (RFC 8414)",
        description="Where the CLI finds the authorization, token and revocation endpoints, "
        "and what they support (S256 PKCE only, public client, no secret).",
        responses={
            200: AuthorizationServerMetadataSerializer,
            **COMMON_ERRORS,
        },
        parameters=[header("Cache-Control", str, [200], "Cacheable for an hour.")],
        examples=[
            OpenApiExample(
                "discovery document",
                value=discovery_document(EXAMPLE_BASE_URL),
                response_only=True,
                status_codes=["200"],
            )
        ],
    )
    def get(self, request):
        raise NotImplementedError  # served by oauth_cli.views.authorization_server_metadata


CONSENT_PAGE_EXAMPLE = (
    "<!DOCTYPE html><html><head><title>Connect the Storefront CLI</title></head><body>"
    "<h1>Connect the Storefront CLI to your account?</h1>"
    '<form method="post"><input type="hidden" name="auth_token" value="…">'
    '<button type="submit">Approve</button>'
    '<button type="submit" name="_method" value="DELETE">Refuse</button></form>'
    "</body></html>"
)
# Example values (spec "Discovery and OAuth protocol", docs/api/oauth.md): made up, in the
# shapes the endpoints issue and accept.
EXAMPLE_STATE = "st-5b1f9c2a"
EXAMPLE_AUTH_TOKEN = "a3f1c9e7b5d2468097ab1cd2ef3456789"
EXAMPLE_CSRF_TOKEN = "kE3nR8sT1vW6yZ0bD4fH7jL2mP5qS9uXaC3eG6iK8oM1rT4vY7zB0dF2hJ5lN8pQ"
EXAMPLE_REFRESH_TOKEN = "Rt4kP9zW2qL7xN3mV8cJ5yB1hD6fG0sA"


def _form_example(name: str, value: dict) -> OpenApiExample:
    return OpenApiExample(name, value=value, request_only=True, media_type=FORM)


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
    **TOO_LARGE_PAGE,
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
            _form_example(
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
            _form_example(
                "refuse", {"auth_token": EXAMPLE_AUTH_TOKEN, "_token": EXAMPLE_CSRF_TOKEN}
            )
        ],
    )
    def delete(self, request):
        raise NotImplementedError


class ClientEndpoint(ProtocolEndpoint):
    """Token and revoke: a public client, or legacy Basic `client_id:` (empty secret)."""

    authentication_classes = [BasicAuthentication]


INVALID_CLIENT = oauth_error(
    "`invalid_client`: unknown client id or wrong Basic credential.", status=401
)
CLIENT_HEADERS = [
    header("WWW-Authenticate", str, [401], 'Bearer error="invalid_client"'),
    header("Cache-Control", NO_STORE, [200, 401], "Never cached."),
]


class TokenEndpoint(ClientEndpoint):
    @extend_schema(
        operation_id="oauth_token",
        summary="Exchange a code or rotate a refresh token",
        description="`authorization_code` with the PKCE verifier, or `refresh_token`: each "
        "answer is a new access and refresh token pair, and a refresh token works once (using "
        "one twice revokes its whole family).",
        request={
            FORM: PolymorphicProxySerializer(
                component_name="TokenGrant",
                serializers=[AuthorizationCodeGrantSerializer, RefreshTokenGrantSerializer],
                resource_type_field_name=None,
            )
        },
        responses={
            200: OpenApiResponse(TokenResponseSerializer, description="A new token pair."),
            **oauth_error(
                "`invalid_grant` (unknown, used or expired code or refresh token; verifier or "
                "redirect_uri mismatch), `invalid_request`, `unsupported_grant_type`, "
                "`unauthorized_client`.",
                body=MALFORMED_OR_PROTOCOL_ERROR,
            ),
            **INVALID_CLIENT,
            **TOO_LARGE,
            **COMMON_ERRORS,
        },
        parameters=[
            *CLIENT_HEADERS,
            header("Pragma", {"type": "string", "enum": ["no-cache"]}, [200], "HTTP/1.0."),
        ],
        examples=[
            _form_example(
                "authorization code",
                {
                    "grant_type": "authorization_code",
                    "client_id": CLI,
                    "code": "Xq3vN8pLmT2rK7wYc4hJ9sD1fG6bZ0aE",
                    "redirect_uri": "http://127.0.0.1:53682/callback",
                    "code_verifier": "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk-cli-example",
                },
            ),
            _form_example(
                "refresh token",
                {
                    "grant_type": "refresh_token",
                    "client_id": CLI,
                    "refresh_token": EXAMPLE_REFRESH_TOKEN,
                },
            ),
            OpenApiExample(
                "token pair",
                value={
                    "access_token": "Jd8x2LpQ7vR4mN9tK3wZ6yH1cF5bG0aS",
                    "token_type": "Bearer",
                    "expires_in": settings.OAUTH2_PROVIDER["ACCESS_TOKEN_EXPIRE_SECONDS"],
                    "scope": settings.OAUTH_SCOPE_ADMIN,
                    "refresh_token": EXAMPLE_REFRESH_TOKEN,
                },
                response_only=True,
                status_codes=["200"],
            ),
        ],
    )
    def post(self, request):
        raise NotImplementedError  # served by oauth_cli.views.CliTokenView


class RevokeEndpoint(ClientEndpoint):
    @extend_schema(
        operation_id="oauth_revoke",
        summary="Revoke a token: disconnects the CLI installation (RFC 7009)",
        description="Sent by the CLI when it disconnects. A live access or refresh token of "
        "the CLI disconnects its installation; an unknown, rotated, revoked or expired one "
        "changes nothing (another machine's connection stays). Both answer 200.",
        request={FORM: RevocationSerializer},
        responses={
            200: OpenApiResponse(
                {"type": "array", "items": {}, "maxItems": 0},
                description="Revoked, or unknown or already invalid (RFC 7009 §2.2): `[]`.",
            ),
            **oauth_error("`invalid_request`: no `token`.", body=MALFORMED_OR_PROTOCOL_ERROR),
            **INVALID_CLIENT,
            **TOO_LARGE,
            **COMMON_ERRORS,
        },
        parameters=CLIENT_HEADERS,
        examples=[
            _form_example(
                "refresh token",
                {
                    "client_id": CLI,
                    "token": EXAMPLE_REFRESH_TOKEN,
                    "token_type_hint": "refresh_token",
                },
            ),
            OpenApiExample("revoked", value=[], response_only=True, status_codes=["200"]),
        ],
    )
    def post(self, request):
        raise NotImplementedError  # served by oauth_cli.views.CliRevokeTokenView
