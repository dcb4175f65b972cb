from django.conf import settings
from django.utils.module_loading import import_string
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, Throttled

from config.api.client_address import client_address_key
from config.api.fields import AUTHORIZATION_MAX_LENGTH
from config.api.ratelimit import RateLimitState, rate_limit_consume


def _resolvers():
    return [import_string(path) for path in settings.BEARER_CREDENTIAL_RESOLVERS]


# Client addresses this process saw spend their failed-authentication budget: their next request
# is counted before the credential lookup, so a refused one costs no database query. A hint (the
# count is in Redis): a stale entry costs one count; emptied past 10,000 entries.
_over_failure_budget: set[str] = set()


class BearerCredentialAuthentication(BaseAuthentication):
    """`Authorization: Bearer <token>`: an API key or an OAuth access token (RFC 6750 §2.1).

    Each resolver in BEARER_CREDENTIAL_RESOLVERS is called with the token and the request (the
    API key's reads the store of a request that names none with the key: stores.credentials),
    recognises its own tokens and returns (user, Credential), or None; one that knows why it
    refuses a token (an expired API key) raises AuthenticationFailed with that reason.
    request.auth is the Credential.

    Failed authentications are limited per client address (API_AUTH_FAILURES_PER_MINUTE,
    docs/design.md "Limits and rate limits"): past the budget, 429 with Retry-After.
    """

    keyword = "Bearer"

    def authenticate(self, request):
        header = get_authorization_header(request).split()
        if not header:
            return None
        counted = (
            bool(_over_failure_budget)  # an empty hint costs a valid request nothing
            and client_address_key(request) in _over_failure_budget
            and _count_failure(request)
        )
        try:
            return self._resolve(header, request)
        except AuthenticationFailed:
            if not counted:
                _count_failure(request)
            raise

    def _resolve(self, header: list[bytes], request):
        # Length first (config/api/fields.py): no rule below reads an over-long header.
        if sum(map(len, header)) > AUTHORIZATION_MAX_LENGTH:
            raise AuthenticationFailed("Malformed Authorization header.")
        if header[0].decode("latin-1").lower() != self.keyword.lower():
            raise AuthenticationFailed("Use an 'Authorization: Bearer <token>' header.")
        if len(header) != 2:
            raise AuthenticationFailed("Malformed Authorization header.")
        try:
            token = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise AuthenticationFailed("Malformed bearer token.") from None
        for resolve in _resolvers():
            resolved = resolve(token, request)
            if resolved is not None:
                return resolved
        raise AuthenticationFailed("Unknown, revoked or expired credential.")

    def authenticate_header(self, request):
        return self.keyword


def _count_failure(request) -> bool:
    """Counts one failure of the client's address (IPv6: network); raises Throttled once its
    budget is spent. False when the limiter is unavailable (it fails open): nothing counted."""
    address = client_address_key(request)
    state = rate_limit_consume(f"auth:{address}", settings.API_AUTH_FAILURES_PER_MINUTE)
    if state is None:
        return False
    if not state.exceeded:
        _over_failure_budget.discard(address)
        return True
    if len(_over_failure_budget) >= 10_000:
        _over_failure_budget.clear()
    _over_failure_budget.add(address)
    # X-RateLimit-* of this budget (RateLimitHeadersMiddleware), as on the other per-address 429s.
    request._request.rate_limit_state = RateLimitState(state.limit, 0, state.reset_seconds)
    raise Throttled(wait=state.reset_seconds)
