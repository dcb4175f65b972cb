"""Fixed-window request budgets on the shared cache (Redis in production and tests).

Fails open: when Redis cannot be reached the request is served and the outage logged,
because an unavailable limiter must not take the API down with it.

The same round trip reads the epochs that tell whether a credential's identity kept by this
process is still current (accounts/identity.py, docs/decisions/identity.md).
"""

import logging
import re
import secrets
import time
import weakref
from dataclasses import dataclass

import redis
from django.conf import settings
from django.core.cache import DEFAULT_CACHE_ALIAS, caches
from django.core.cache.backends.redis import RedisCache
from redis.backoff import NoBackoff
from redis.retry import Retry
from rest_framework.throttling import BaseThrottle

from core.api.client_address import client_address_key
from core.api.errors import json_error
from core.operations import metrics

logger = logging.getLogger(__name__)
WINDOW_SECONDS = 60


@dataclass(frozen=True)
class RateLimitState:
    limit: int
    remaining: int
    reset_seconds: int
    # The epochs asked for with the count (rate_limit_consume): the run id of the Redis server
    # that answered, then the values of the epoch keys; None when none were asked for or the
    # cache cannot keep them (the file cache of `make run`).
    epochs: tuple[str, ...] | None = None

    @property
    def exceeded(self) -> bool:
        return self.remaining < 0


# After a cache failure this process stops asking the cache for a while, so an outage costs
# one connection timeout per pause instead of one per request (and one log line, not a flood).
OUTAGE_PAUSE_SECONDS = 5.0
_cache_unavailable_until = 0.0


# An epoch key lives this long after it was made; then the next request makes a new one, and
# each process reads the identity again once. It bounds how long a change whose epoch could not
# be advanced (Redis unreachable from the process that made it) may go unseen.
EPOCH_SECONDS = 3600


def rate_limit_consume(
    bucket: str, limit: int, *, epoch_keys: tuple[str, ...] = ()
) -> RateLimitState | None:
    """Counts one request against `bucket` and reads the values of `epoch_keys` (each made with
    a new random value when missing) in the same round trip, preceded by the run id of the
    server that answered; None when the cache is unavailable (fail open)."""
    global _cache_unavailable_until
    now = time.time()
    if now < _cache_unavailable_until:
        return None
    window = int(now // WINDOW_SECONDS)
    reset_seconds = WINDOW_SECONDS - int(now % WINDOW_SECONDS)
    key = f"ratelimit:{bucket}:{window}"
    try:
        count, epochs = _window_count(key, epoch_keys)
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
    return RateLimitState(limit, limit - count, reset_seconds, epochs)


def _window_count(key: str, epoch_keys: tuple[str, ...]) -> tuple[int, tuple[str, ...] | None]:
    """Counts one request in `key`: the window's count so far, and the epochs' values."""
    ttl = WINDOW_SECONDS + 5
    # The cache of this thread, looked up once: each attribute read through the `cache` proxy
    # is a lookup of its own.
    backend = caches[DEFAULT_CACHE_ALIAS]
    if isinstance(backend, RedisCache):
        # One round trip and one reply on the hot path (Django's add + incr take three: SET NX,
        # EXISTS, INCR; a pipelined INCR + EXPIRE costs more of redis-py per request).
        # Epoch keys are ours (hex digests and ids): made, not validated, on the hot path.
        keys = [backend.make_and_validate_key(key), *map(backend.make_key, epoch_keys)]
        # A fresh epoch is random, not 1: a Redis that lost its keys (a restart) must not give
        # back a value a process still holds from before.
        args = [ttl, secrets.token_hex(8), EPOCH_SECONDS] if epoch_keys else [ttl]
        counter = _window_counter(backend)
        count, *epochs = counter.script(keys=keys, args=args)
        # Read after the call, which may have connected again (to another server).
        run_id = counter.server.run_id
        return count, (run_id, *(e.decode() for e in epochs)) if epoch_keys else None
    # Other caches (the file cache of `make run`): no epochs, so identities are read each time.
    return (1 if backend.add(key, 1, timeout=ttl) else backend.incr(key)), None


# INCR and EXPIRE in one server-side step (EVALSHA; redis-py loads the script when the server
# does not know it yet, e.g. after a restart), then each epoch key's value, made when missing.
WINDOW_COUNT_LUA = """
local count = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[1])
local reply = {count}
for i = 2, #KEYS do
  local epoch = redis.call('GET', KEYS[i])
  if not epoch then
    epoch = ARGV[2] .. i
    redis.call('SET', KEYS[i], epoch, 'EX', ARGV[3])
  end
  reply[i] = epoch
end
return reply
"""


class ServerReached:
    """The run id of the Redis server a connection reached, read once per connection (`INFO
    server`, as redis-py's `redis_connect_func`), never per call.

    An epoch's value means something only within the lifetime of the server process that made
    it. A Redis restarted from an older snapshot, or a replica promoted before it had copied a
    deletion, gives back values that changes since have deleted; either is another server
    process than the one that made them, with a run id of its own, reached by a new connection.
    An identity is kept under the run id with its epochs (docs/decisions/identity.md)."""

    def __init__(self):
        self.run_id = ""

    def connected(self, connection) -> None:
        # redis-py's own setup (HELLO, AUTH, SELECT), then the run id; a failure here is a
        # failed connection, so no call is answered under the run id it left.
        connection.on_connect()
        connection.send_command("INFO", "server")
        info = connection.read_response()
        match = RUN_ID.search(info.decode() if isinstance(info, bytes) else info)
        if match is None:
            raise redis.ConnectionError("the server's INFO gave no run_id")
        previous, self.run_id = self.run_id, match.group(1)
        if previous and previous != self.run_id:
            logger.warning(
                "Redis is another server process (run id %s, was %s): the identities this "
                "process kept are read again",
                self.run_id,
                previous,
            )


RUN_ID = re.compile(r"^run_id:([0-9a-f]+)\s*$", re.MULTILINE)


class WindowCounter:
    """The script on a redis.Redis of its own with one connection, and the server it reached."""

    def __init__(self, server: str, options: dict):
        self.server = ServerReached()
        # A connection the server closed (a restart) is made again at once and the call
        # retried once, without the default retry's backoff of up to a second.
        client = redis.Redis.from_url(
            server,
            single_connection_client=True,
            retry=Retry(NoBackoff(), 1),
            redis_connect_func=self.server.connected,
            **options,
        )
        self.script = client.register_script(WINDOW_COUNT_LUA)


# The counter of each Django Redis cache object (one per thread: django.core.cache.caches),
# made from the cache's settings: redis-py then takes no connection from a pool and checks none
# per call, and Django's client (a new one per get_client() call) is not built per request
# (docs/benchmarks/layer.md). Weak keys: a cache object Django drops (a settings
# change in tests) takes its connection with it. The connection is made on the first call and
# again after an error.
_counters_by_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _window_counter(backend: RedisCache) -> WindowCounter:
    counter = _counters_by_cache.get(backend)
    if counter is None:
        config = settings.CACHES[DEFAULT_CACHE_ALIAS]
        location = config["LOCATION"]
        # Django's RedisCache writes to its first server.
        server = (re.split("[;,]", location) if isinstance(location, str) else location)[0]
        counter = _counters_by_cache[backend] = WindowCounter(server, config.get("OPTIONS", {}))
    return counter


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
    """Per-credential budget (API_RATE_LIMIT_PER_MINUTE), shared by every API endpoint.

    The bearer authentication already counted the request, in the round trip that checks its
    identity is current (accounts/authentication.py), and left the state on the request
    (`credential_rate_state`, None while the limiter is unavailable); this only decides.
    """

    def allow_request(self, request, view):
        if request.auth is None:
            return True
        self.state = request._request.credential_rate_state
        if self.state is None:
            return True
        request._request.rate_limit_state = RateLimitState(
            self.state.limit, max(self.state.remaining, 0), self.state.reset_seconds
        )
        return not self.state.exceeded

    def wait(self):
        return self.state.reset_seconds if self.state else None
