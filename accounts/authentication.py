from django.conf import settings
from django.utils.module_loading import import_string
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed


def _resolvers():
    return [import_string(path) for path in settings.BEARER_CREDENTIAL_RESOLVERS]


class BearerCredentialAuthentication(BaseAuthentication):
    """`Authorization: Bearer <token>`: an API key or an OAuth access token (RFC 6750 §2.1).

    Each resolver in BEARER_CREDENTIAL_RESOLVERS recognises its own tokens and returns
    (user, Credential), or None; one that knows why it refuses a token (an expired API key)
    raises AuthenticationFailed with that reason. request.auth is the Credential.
    """

    keyword = "Bearer"

    def authenticate(self, request):
        header = get_authorization_header(request).split()
        if not header:
            return None
        if header[0].decode("latin-1").lower() != self.keyword.lower():
            raise AuthenticationFailed("Use an 'Authorization: Bearer <token>' header.")
        if len(header) != 2:
            raise AuthenticationFailed("Malformed Authorization header.")
        try:
            token = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise AuthenticationFailed("Malformed bearer token.") from None
        for resolve in _resolvers():
            resolved = resolve(token)
            if resolved is not None:
                return resolved
        raise AuthenticationFailed("Unknown, revoked or expired credential.")

    def authenticate_header(self, request):
        return self.keyword
