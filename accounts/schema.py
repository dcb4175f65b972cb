"""OpenAPI description of bearer authentication (loaded by AccountsConfig.ready)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object


class BearerCredentialScheme(OpenApiAuthenticationExtension):
    # API keys and OAuth access tokens: one scheme, as both are `Authorization: Bearer`.
    target_class = "accounts.authentication.BearerAuthentication"
    match_subclasses = True
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return build_bearer_security_scheme_object(
            header_name="Authorization",
            token_prefix="Bearer",
            bearer_format="API key (sf_...) or OAuth access token",
        )
