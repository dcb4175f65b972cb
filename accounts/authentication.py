"""Bearer authentication (RFC 6750 §2.1): the DRF authentication classes of REST_FRAMEWORK
DEFAULT_AUTHENTICATION_CLASSES, API keys here (`sf_...`), OAuth access tokens in
oauth_cli/authentication.py. request.auth is the Credential.

Each request makes one Redis round trip for its credential: it counts the request against the
credential's rate limit and reads the epochs that say whether the identity this process kept is
current (accounts/identity.py); in the steady state no SQL is sent. The throttle
(core.api.ratelimit.CredentialRateThrottle) decides on that count.

Failed authentications are limited per client address (API_AUTH_FAILURES_PER_MINUTE,
docs/design.md "Limits and rate limits"): past the budget, 429 with Retry-After. Only failures
are refused (docs/decisions/hardening.md "The failed-authentication limit refuses failures"): a
credential that authenticates is
served from an over-budget address, and a bogus one is refused before any database read.
"""

from datetime import UTC

from django.conf import settings
from django.core.cache import cache
from django.db.models import Q
from django.utils import timezone
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, Throttled

from accounts.credentials import CREDENTIAL_API_KEY, Credential
from accounts.identity import (
    Identity,
    bearer_token_hash,
    credential_epoch_key,
    identity_forget,
    identity_keep,
    identity_kept,
)
from accounts.models import ApiKey
from accounts.selectors import (
    API_KEY_PREFIX,
    LAST_USED_RESOLUTION,
    api_key_live,
    api_key_selected_store_ids,
)
from core.api.client_address import client_address_key
from core.api.fields import AUTHORIZATION_MAX_LENGTH
from core.api.ratelimit import RateLimitState, rate_limit_consume

KEYWORD = "Bearer"


def bearer_token(request) -> str | None:
    """The token of `Authorization: Bearer <token>`; None without the header. A malformed
    header raises AuthenticationFailed."""
    raw = get_authorization_header(request)
    # Length first (core/api/fields.py): no rule below reads an over-long header.
    if len(raw) > AUTHORIZATION_MAX_LENGTH:
        raise AuthenticationFailed("Malformed Authorization header.")
    header = raw.split()
    if not header:
        return None
    if header[0].decode("latin-1").lower() != KEYWORD.lower():
        raise AuthenticationFailed("Use an 'Authorization: Bearer <token>' header.")
    if len(header) != 2:
        raise AuthenticationFailed("Malformed Authorization header.")
    try:
        return header[1].decode("ascii")
    except UnicodeDecodeError:
        raise AuthenticationFailed("Malformed bearer token.") from None


# Client addresses this process saw spend their failed-authentication budget: their next request
# with a credential this process does not know is counted before the credential is read, so a
# refused one costs no database query. A hint (the count is in Redis): a stale entry costs one
# count; emptied past 10,000 entries.
_over_failure_budget: set[str] = set()


class BearerAuthentication(BaseAuthentication):
    """What API keys and OAuth access tokens share: the header, the kept identity and its
    epochs, the failure budget. A subclass says which tokens are its own (`recognises`) and
    reads the identity of one from the database (`identity_read`)."""

    def recognises(self, token: str) -> bool:
        raise NotImplementedError

    def identity_read(self, token_hash: str) -> Identity | None:
        """The identity of the credential with this token hash, or None when there is no live
        one; raises AuthenticationFailed to tell the holder why (an expired API key)."""
        raise NotImplementedError

    def identity_used(self, identity: Identity) -> None:
        """Called on every request the identity authenticates."""

    def authenticate(self, request):
        try:
            token = bearer_token(request)
        except AuthenticationFailed:
            _count_failure(request)
            raise
        if token is None or not self.recognises(token):
            return None
        token_hash = bearer_token_hash(token)
        kept = identity_kept(token_hash)
        counted = kept is None and _counted_unless_known(request, token_hash)
        try:
            identity, rate = self._current_identity(request._request, token_hash, kept)
        except AuthenticationFailed:
            identity_forget(token_hash)
            if not counted:
                _count_failure(request)
            raise
        # For CredentialRateThrottle: this request is counted already.
        request._request.credential_rate_state = rate
        self.identity_used(identity)
        return identity.user, identity.credential

    def _current_identity(self, http_request, token_hash: str, kept: Identity | None):
        """(identity, rate-limit state): the kept identity while its epochs are unchanged,
        else the database's."""
        asked = False
        if kept is not None and not kept.expired(timezone.now()):
            rate, asked = _consume(http_request, kept), True
            if rate is not None and rate.epochs is not None and rate.epochs == kept.epochs:
                return kept, rate
        identity = self.identity_read(token_hash)
        if identity is None:
            raise AuthenticationFailed("Unknown, revoked or expired credential.")
        if asked:
            # The epochs were read before the rows: any later change has advanced them.
            identity.epochs = rate.epochs if rate is not None else None
        else:
            # The first request of this credential here: its epochs are read after its rows,
            # so they confirm nothing; kept unconfirmed, the next request reads again.
            rate = _consume(http_request, identity)
        if rate is not None and rate.epochs is not None:
            identity_keep(identity)
        return identity, rate

    def authenticate_header(self, request):
        return KEYWORD


def _consume(http_request, identity: Identity) -> RateLimitState | None:
    """The request's count against its credential's budget, taken once per request: a read
    answered a second time on a new database connection
    (core.database.connections.ReadFailoverMiddleware)
    authenticates again, and is given its first count (and the epochs read with it)."""
    key = f"cred:{identity.credential.rate_limit_key}"
    counted = getattr(http_request, "credential_rate_counted", None)
    if counted is not None and counted[0] == key:
        return counted[1]
    rate = rate_limit_consume(
        key, settings.API_RATE_LIMIT_PER_MINUTE, epoch_keys=identity.epoch_keys
    )
    http_request.credential_rate_counted = (key, rate)
    return rate


class ApiKeyAuthentication(BearerAuthentication):
    """`Authorization: Bearer sf_...`: an API key. An expired key gets a 401 that says so: only
    the holder of the secret learns it, and "expired" tells them to issue a new key rather
    than hunt for a typo."""

    def recognises(self, token: str) -> bool:
        return token.startswith(API_KEY_PREFIX)

    def identity_read(self, token_hash: str) -> Identity | None:
        key = api_key_live(key_hash=token_hash)
        if key is None:
            return None
        if key.expires_at is not None and key.expires_at <= timezone.now():
            raise AuthenticationFailed(
                f"This API key expired at {key.expires_at.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}; "
                "issue a new key."
            )
        credential = Credential(
            type=CREDENTIAL_API_KEY,
            user_id=key.user_id,
            abilities=tuple(key.abilities),
            store_access=key.store_access,
            selected_store_ids=api_key_selected_store_ids(api_key=key),
            current_store_id=key.current_store_id,
            current_store_deleted=key.current_store_deleted_at is not None,
            rate_limit_key=f"api_key:{key.pk}",
            api_key_id=key.pk,
        )
        return Identity(
            user=key.user,
            credential=credential,
            token_hash=token_hash,
            expires_at=key.expires_at,
            last_used_at=key.last_used_at,
        )

    def identity_used(self, identity: Identity) -> None:
        """Records `last_used_at` at most once a minute per key and process (a write off the
        hot path; the filter skips it when another process wrote it within the minute)."""
        now = timezone.now()
        recently = now - LAST_USED_RESOLUTION
        if identity.last_used_at is not None and identity.last_used_at >= recently:
            return
        ApiKey.objects.filter(pk=identity.credential.api_key_id).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=recently)
        ).update(last_used_at=now)
        identity.last_used_at = now


def _counted_unless_known(request, token_hash: str) -> bool:
    """From an address this process saw over its failure budget, a credential
    the process does not know is counted as a failure before it is read (429 once the budget is
    spent: no database query), unless Redis knows it: its credential epoch exists only while a
    credential with this hash authenticates (made on a successful read, deleted on a failed
    one and by revocation). True when a failure was counted."""
    if not _over_failure_budget or client_address_key(request) not in _over_failure_budget:
        return False
    try:
        known = cache.has_key(credential_epoch_key(token_hash))
    except Exception:
        known = False  # Redis is down: the count below fails open, the credential is read
    return False if known else _count_failure(request)


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
