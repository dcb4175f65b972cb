from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from oauth_cli.authorize import CODE_CHALLENGE_PATTERN, STATE_PATTERN

# The one grant model (spec "OAuth installation": a grant covers the account's stores).
GRANT_MODEL = "account"


class ConstantField(serializers.ChoiceField):
    """A value that is the same for every installation (one client, one grant model, one
    scope): rendered as is, and stated in the schema as the enum of that one value."""

    def __init__(self, value, **kwargs):
        self.value = value
        super().__init__(choices=[value], **kwargs)

    def to_representation(self, instance):
        return self.value


class ConstantListField(serializers.ListField):
    """The one-element list of its `child`, a ConstantField."""

    def __init__(self, **kwargs):
        super().__init__(source="*", **kwargs)

    def to_representation(self, instance):
        return [self.child.value]


# Renders an oauth_cli.models.Installation, its application selected with it.
class InstallationSerializer(serializers.Serializer):
    id = serializers.UUIDField(help_text="Installation id.")
    client_id = serializers.UUIDField(
        source="application.client_id", help_text="client_id of the official CLI."
    )
    grant_model = ConstantField(GRANT_MODEL, source="*")
    scopes = ConstantListField(child=ConstantField(settings.OAUTH_SCOPE_ADMIN))
    created_at = serializers.DateTimeField()


# OpenAPI example (spec "OAuth installation (v2)"), used by oauth_cli/api_views.py.
INSTALLATION_EXAMPLE = {
    "id": "5f1d2c3b-8a7e-4b6c-9d0e-1f2a3b4c5d6e",
    "client_id": settings.CLI_CLIENT_ID,
    "grant_model": "account",
    "scopes": ["admin"],
    "created_at": "2026-06-01T09:00:00Z",
}


# --- The OAuth protocol endpoints' bodies (RFC 6749, 7009, 8414): their OpenAPI description
# only (oauth_cli/schema.py); django-oauth-toolkit and oauthlib parse and validate the requests.

# 1..65535, as `authorize.loopback_redirect_uri_problem` requires (RFC 8252 §7.3).
_PORT = r"([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
LOOPBACK_REDIRECT_URI_PATTERN = rf"^http://(127\.0\.0\.1|\[::1\]):{_PORT}/callback$"
# Django's CSRF token: the 32-character secret or its 64-character masked form.
CSRF_TOKEN_PATTERN = r"^[A-Za-z0-9]{32}([A-Za-z0-9]{32})?$"


@extend_schema_field({"type": "string", "format": "uuid", "enum": [settings.CLI_CLIENT_ID]})
class CliClientIdField(serializers.CharField):
    """The official CLI's client id, the only registered client; any other is `invalid_client`."""


class OAuthErrorSerializer(serializers.Serializer):
    """RFC 6749 §5.2 error object; `error_description` may be absent."""

    error = serializers.CharField(help_text="For example `invalid_request`.")
    error_description = serializers.CharField(required=False)


class AuthorizationServerMetadataSerializer(serializers.Serializer):
    """RFC 8414 authorization server metadata (oauth_cli.views.discovery_document)."""

    issuer = serializers.URLField()
    authorization_endpoint = serializers.URLField()
    token_endpoint = serializers.URLField()
    revocation_endpoint = serializers.URLField()
    response_types_supported = serializers.ListField(child=serializers.CharField())
    grant_types_supported = serializers.ListField(child=serializers.CharField())
    code_challenge_methods_supported = serializers.ListField(child=serializers.CharField())
    token_endpoint_auth_methods_supported = serializers.ListField(child=serializers.CharField())
    revocation_endpoint_auth_methods_supported = serializers.ListField(
        child=serializers.CharField()
    )
    scopes_supported = serializers.ListField(child=serializers.CharField())
    authorization_response_iss_parameter_supported = serializers.BooleanField()


class AuthorizeQuerySerializer(serializers.Serializer):
    """The authorization request (RFC 6749 §4.1.1, PKCE RFC 7636 §4.3)."""

    response_type = ConstantField("code", help_text="Authorization code flow.")
    client_id = CliClientIdField(help_text="Any other is `invalid_client` (400, not redirected).")
    redirect_uri = serializers.RegexField(
        LOOPBACK_REDIRECT_URI_PATTERN,
        help_text="The CLI's loopback callback, any port (RFC 8252 §7.3); `localhost` is refused.",
    )
    scope = ConstantField(
        settings.OAUTH_SCOPE_ADMIN, required=False, help_text="Defaults to admin."
    )
    state = serializers.RegexField(STATE_PATTERN, help_text="Returned with the code.")
    code_challenge = serializers.RegexField(
        CODE_CHALLENGE_PATTERN,
        min_length=43,
        max_length=43,
        help_text="BASE64URL(SHA-256(code_verifier)) without padding (RFC 7636 §4.2).",
    )
    code_challenge_method = ConstantField("S256", help_text="PKCE method.")


class ConsentRefusalFormSerializer(serializers.Serializer):
    """The consent page's Refuse form."""

    auth_token = serializers.CharField(
        min_length=1, help_text="The single-use token of the consent page this answers."
    )
    client_id = CliClientIdField(required=False, help_text="Optional; checked when given.")
    state = serializers.CharField(min_length=1, required=False)
    _token = serializers.RegexField(CSRF_TOKEN_PATTERN, help_text="CSRF.")


class ConsentApprovalFormSerializer(ConsentRefusalFormSerializer):
    """The consent page's Approve form; with `_method=DELETE` it refuses."""

    client_id = CliClientIdField(required=False, help_text="Required to approve.")
    state = serializers.CharField(min_length=1, required=False, help_text="Required to approve.")
    _method = serializers.RegexField(
        r"^DELETE$", required=False, help_text="Refuse instead of approve (the Refuse button)."
    )


class AuthorizationCodeGrantSerializer(serializers.Serializer):
    """RFC 6749 §4.1.3 with PKCE (RFC 7636 §4.5); `client_id` or legacy Basic auth."""

    grant_type = ConstantField("authorization_code")
    client_id = CliClientIdField(required=False)
    code = serializers.CharField(min_length=1)
    redirect_uri = serializers.RegexField(LOOPBACK_REDIRECT_URI_PATTERN)
    # RFC 7636 §4.1: 43 to 128 unreserved characters.
    code_verifier = serializers.RegexField(r"^[A-Za-z0-9._~-]{43,128}$")


class RefreshTokenGrantSerializer(serializers.Serializer):
    """RFC 6749 §6; the refresh token rotates."""

    grant_type = ConstantField("refresh_token")
    client_id = CliClientIdField(required=False)
    refresh_token = serializers.CharField(min_length=1)


class TokenResponseSerializer(serializers.Serializer):
    access_token = serializers.CharField()
    token_type = ConstantField("Bearer")
    expires_in = serializers.IntegerField(help_text="Seconds until the access token expires.")
    scope = serializers.CharField(help_text=f"`{settings.OAUTH_SCOPE_ADMIN}`.")
    refresh_token = serializers.CharField()


class RevocationSerializer(serializers.Serializer):
    """RFC 7009 §2.1; a live token of the CLI disconnects the installation (every token
    family); a stale one (expired, rotated, revoked) revokes nothing."""

    client_id = CliClientIdField(required=False)
    token = serializers.CharField(min_length=1)
    token_type_hint = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="A hint only (`refresh_token`): unknown values are ignored.",
    )
