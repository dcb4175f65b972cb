"""The endpoints the CLI calls itself in /api/schema/: the discovery document (RFC 8414), the
token endpoint (RFC 6749 §4.1.3, §6) and revocation (RFC 7009). How they are attached:
oauth_cli/schema.py."""

from django.conf import settings
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework.authentication import BasicAuthentication

from core.api.pagination import EXAMPLE_BASE_URL
from oauth_cli.schema import (
    CLI,
    COMMON_ERRORS,
    EXAMPLE_REFRESH_TOKEN,
    FORM,
    MALFORMED_OR_PROTOCOL_ERROR,
    NO_STORE,
    TOO_LARGE,
    ProtocolEndpoint,
    form_example,
    header,
    oauth_error,
)
from oauth_cli.serializers import (
    AuthorizationCodeGrantSerializer,
    AuthorizationServerMetadataSerializer,
    RefreshTokenGrantSerializer,
    RevocationSerializer,
    TokenResponseSerializer,
)
from oauth_cli.views import discovery_document


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
            form_example(
                "authorization code",
                {
                    "grant_type": "authorization_code",
                    "client_id": CLI,
                    "code": "Xq3vN8pLmT2rK7wYc4hJ9sD1fG6bZ0aE",
                    "redirect_uri": "http://127.0.0.1:53682/callback",
                    "code_verifier": "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk-cli-example",
                },
            ),
            form_example(
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
            form_example(
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
