"""OpenAPI description of bearer authentication (loaded by AccountsConfig.ready)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object

SCHEME = "bearerAuth"


class BearerCredentialScheme(OpenApiAuthenticationExtension):
    """API keys and OAuth access tokens (accounts.authentication.BearerAuthentication's
    subclasses, both in DEFAULT_AUTHENTICATION_CLASSES) are one scheme, `Authorization:
    Bearer`: required and defined once per operation, by the first of the view's bearer
    classes; the others add nothing (an empty list of names registers no component)."""

    target_class = "accounts.authentication.BearerAuthentication"
    match_subclasses = True
    first = True

    @property
    def name(self):
        return SCHEME if self.first else []

    def get_security_requirement(self, auto_schema):
        # DRF makes new instances on each get_authenticators(): compared by class.
        bearer = [a for a in auto_schema.view.get_authenticators() if _is_bearer(a)]
        self.first = type(bearer[0]) is type(self.target)
        return {SCHEME: []} if self.first else None

    def get_security_definition(self, auto_schema):
        return build_bearer_security_scheme_object(
            header_name="Authorization",
            token_prefix="Bearer",
            bearer_format="API key (sf_...) or OAuth access token",
        )


def _is_bearer(authenticator) -> bool:
    from accounts.authentication import BearerAuthentication

    return isinstance(authenticator, BearerAuthentication)
