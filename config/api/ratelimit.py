"""Fixed-window request budgets on the shared cache (Redis in production and tests).

Fails open: when Redis cannot be reached the request is served and the outage logged,
because an unavailable limiter must not take the API down with it.
"""

import logging
import time
import weakref
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.core.cache.backends.redis import RedisCacheClient
from rest_framework.throttling import BaseThrottle

from config import metrics
from config.api.client_address import client_address_key
from config.api.errors import json_error

logger = logging.getLogger(__name__)
WINDOW_SECONDS = 60


@dataclass(frozen=True)
class RateLimitState:
    limit: int
    remaining: int
    reset_seconds: int

    @property
    def exceeded(self) -> bool:
        return self.remaining < 0


# After a cache failure this process stops asking the cache for a while, so an outage costs
# one connection timeout per pause instead of one per request (and one log line, not a flood).
OUTAGE_PAUSE_SECONDS = 5.0
_cache_unavailable_until = 0.0


def rate_limit_consume(bucket: str, limit: int) -> RateLimitState | None:
    """Counts one request against `bucket`; None when the cache is unavailable (fail open)."""
    global _cache_unavailable_until
    now = time.time()
    if now < _cache_unavailable_until:
        return None
    window = int(now // WINDOW_SECONDS)
    reset_seconds = WINDOW_SECONDS - int(now % WINDOW_SECONDS)
    key = f"ratelimit:{bucket}:{window}"
    try:
        count = _window_count(key)
    except Exception:
        _cache_unavailable_until = time.time() + OUTAGE_PAUSE_SECONDS
        logger.warning(
            "rate limiter unavailable, serving without a limit for %.0f s",
            OUTAGE_PAUSE_SECONDS,
            exc_info=True,
        )
        return None
    if count > limit:
        metrics.rate_limit_refused(bucket)
    return RateLimitState(limit=limit, remaining=limit - count, reset_seconds=reset_seconds)


def _window_count(key: str) -> int:
    """Counts one request in `key` and returns the window's count so far."""
    ttl = WINDOW_SECONDS + 5
    if isinstance(getattr(cache, "_cache", None), RedisCacheClient):
        # One round trip and one reply on the hot path (Django's add + incr take three: SET NX,
        # EXISTS, INCR; a pipelined INCR + EXPIRE cost 0.1 ms more of redis-py per request).
        full_key = cache.make_and_validate_key(key)
        return _window_count_script(cache._cache)(keys=[full_key], args=[ttl])
    # Other caches (the file cache of `make run`).
    return 1 if cache.add(key, 1, timeout=ttl) else cache.incr(key)


# INCR and EXPIRE in one server-side step (EVALSHA; redis-py loads the script when the server
# does not know it yet, e.g. after a restart).
WINDOW_COUNT_LUA = """
local count = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[1])
return count
"""

# One registered script (bound to one redis.Redis) per connection pool, made once: Django's
# get_client() builds a new client on each call, which cost ~0.1 ms of every request
# (docs/benchmarks/layer.md). Weak keys: a pool that Django drops (a cache reset in tests)
# takes its script with it.
_scripts_by_pool: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _window_count_script(cache_client: RedisCacheClient):
    pool = cache_client._get_connection_pool(write=True)
    script = _scripts_by_pool.get(pool)
    if script is None:
        client = cache_client.get_client(write=True)
        script = _scripts_by_pool[pool] = client.register_script(WINDOW_COUNT_LUA)
    return script


def address_rate_limited(request, bucket: str, limit: int):
    """The per-client-address (IPv6: network) budget of an endpoint without a credential (the
    OAuth protocol endpoints, /readyz, /status): the 429 envelope with Retry-After and
    X-RateLimit-* once `limit` requests this minute are spent under `bucket`, else None (also
    while the limiter is unavailable: it fails open)."""
    state = rate_limit_consume(f"{bucket}:{client_address_key(request)}", limit)
    if state is None or not state.exceeded:
        return None
    return json_error(
        request,
        "rate_limit_exceeded",
        headers={
            "Retry-After": str(max(1, state.reset_seconds)),
            "X-RateLimit-Limit": str(state.limit),
            "X-RateLimit-Remaining": "0",
        },
    )


class CredentialRateThrottle(BaseThrottle):
    """Per-credential budget (API_RATE_LIMIT_PER_MINUTE), shared by every API endpoint."""

    def allow_request(self, request, view):
        credential = request.auth
        if credential is None:
            return True
        self.state = rate_limit_consume(
            f"cred:{credential.rate_limit_key}", settings.API_RATE_LIMIT_PER_MINUTE
        )
        if self.state is None:
            return True
        request._request.rate_limit_state = RateLimitState(
            self.state.limit, max(self.state.remaining, 0), self.state.reset_seconds
        )
        return not self.state.exceeded

    def wait(self):
        return self.state.reset_seconds if self.state else None
