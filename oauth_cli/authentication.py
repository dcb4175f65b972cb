"""OAuth access tokens of the CLI as bearer credentials (RFC 6750 §2.1), in REST_FRAMEWORK
DEFAULT_AUTHENTICATION_CLASSES after accounts' API keys; what they share (the header, the kept
identity, the failure budget) is accounts.authentication.BearerAuthentication."""

from accounts.authentication import BearerAuthentication
from accounts.selectors import API_KEY_PREFIX
from oauth_cli.selectors import access_token_identity


class OAuthAccessTokenAuthentication(BearerAuthentication):
    """Every bearer token that is not an API key: the last class, so an unknown token is a
    counted failure (401), never a request without credentials."""

    def recognises(self, token: str) -> bool:
        return not token.startswith(API_KEY_PREFIX)

    def identity_read(self, token_hash: str):
        return access_token_identity(token_hash)
