"""OpenAPI description of bearer authentication (loaded by AccountsConfig.ready)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object


class BearerCredentialScheme(OpenApiAuthenticationExtension):
    # API keys and OAuth access tokens: one scheme, as both are `Authorization: Bearer`.
    target_class = "accounts.authentication.BearerAuthentication"
    match_subclasses = True
    name = "bearerAuth"

    def get_security_requirement(self, auto_schema):
        # Listed once per operation, for the first of the view's bearer classes (DRF makes new
        # instances on each get_authenticators(): compared by class).
        bearer = [a for a in auto_schema.view.get_authenticators() if _is_bearer(a)]
        first = type(bearer[0]) is type(self.target)
        return super().get_security_requirement(auto_schema) if first else None

    def get_security_definition(self, auto_schema):
        return build_bearer_security_scheme_object(
            header_name="Authorization",
            token_prefix="Bearer",
            bearer_format="API key (sf_...) or OAuth access token",
        )


def _is_bearer(authenticator) -> bool:
    from accounts.authentication import BearerAuthentication

    return isinstance(authenticator, BearerAuthentication)
