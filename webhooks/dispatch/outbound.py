"""The bound on the outbound calls a web request waits for: a channel's test send and the DNS
check of a channel URL (docs/decisions/hardening.md, Hardening V 1).

Such a call holds its request's thread for as long as the other side makes it wait (its own
budget at most). So that no tenant can spend the threads every other tenant's requests need:
- a store has at most one call of each kind in flight, across every process: a key in the
  shared cache (SET NX with an expiry a little past the call's budget, so that a process that
  died holding it frees it too). Another one answers 429 with Retry-After, the seconds until
  the call in flight is over at the latest;
- a process has at most WEBHOOKS_OUTBOUND_CALLS_PER_PROCESS calls in flight, well below its
  threads (gunicorn's WEB_THREADS), taken without waiting: one more answers 503 with
  Retry-After, and the process's other threads stay free for every other request.

Without the cache (unreachable) the per-store bound is not enforced and the outage is logged;
the per-process one always is.
"""

import contextlib
import logging
import math
import os
import secrets
import threading
import time

from django.conf import settings
from django.core.cache import cache

from core.api.errors import RateLimited, ServiceUnavailable
from core.operations import metrics

logger = logging.getLogger(__name__)

TEST_SEND = "test_send"
DNS_CHECK = "dns_check"
# The store's key outlives the call's budget by this much: the call's end (its deadline, then
# the answer) comes first, so a key never expires under a call still running.
KEY_MARGIN_SECONDS = 2.0


class _ProcessCalls:
    """The outbound calls in flight in this process."""

    def __init__(self):
        self._lock = threading.Lock()
        self.in_flight = 0

    def take(self, limit: int) -> bool:
        with self._lock:
            if self.in_flight >= limit:
                return False
            self.in_flight += 1
            return True

    def give_back(self) -> None:
        with self._lock:
            self.in_flight -= 1


_process_calls = _ProcessCalls()


def _process_calls_reset() -> None:
    # A forked child has none of its parent's calls, and the parent's lock may have been held
    # at fork time: it starts afresh.
    global _process_calls
    _process_calls = _ProcessCalls()


os.register_at_fork(after_in_child=_process_calls_reset)


def _store_key(kind: str, store_id: int) -> str:
    return f"webhooks:outbound:{kind}:{store_id}"


def _store_take(key: str, token: str, seconds: float) -> float | None:
    """Takes the store's key for `seconds`: None when taken (or the cache is unavailable), else
    the seconds until the call holding it is over at the latest."""
    ends_at = time.time() + seconds
    try:
        if cache.add(key, f"{token} {ends_at}", timeout=math.ceil(seconds)):
            return None
        held = cache.get(key)
    except Exception:
        logger.warning("outbound calls: cache unavailable, no per-store bound", exc_info=True)
        return None
    if held is None:  # the holder ended between the two reads
        return 1.0
    return max(float(held.partition(" ")[2]) - time.time(), 1.0)


def _store_give_back(key: str, token: str) -> None:
    try:
        held = cache.get(key)
        if held is not None and held.partition(" ")[0] == token:
            cache.delete(key)
    except Exception:
        logger.warning("outbound calls: could not free %s (it expires)", key, exc_info=True)


@contextlib.contextmanager
def outbound_call(*, kind: str, store_id: int | None, seconds: float):
    """Runs the block as one outbound call of `kind` for the store, which lasts at most
    `seconds`; raises RateLimited (the store's call of this kind is in flight) or
    ServiceUnavailable (this process's calls are at their bound) without waiting."""
    key = token = None
    if store_id is not None:
        key, token = _store_key(kind, store_id), secrets.token_hex(8)
        busy_for = _store_take(key, token, seconds + KEY_MARGIN_SECONDS)
        if busy_for is not None:
            metrics.outbound_call_refused(call=kind, bound="store")
            raise RateLimited(
                math.ceil(busy_for),
                f"This store's previous {kind.replace('_', ' ')} is still waiting for an "
                "answer; one at a time. Retry after it ends.",
            )
    if not _process_calls.take(settings.WEBHOOKS_OUTBOUND_CALLS_PER_PROCESS):
        if key is not None:
            _store_give_back(key, token)
        metrics.outbound_call_refused(call=kind, bound="process")
        logger.warning(
            "outbound calls: %d in flight in this process, %s refused",
            settings.WEBHOOKS_OUTBOUND_CALLS_PER_PROCESS,
            kind,
        )
        raise ServiceUnavailable(
            math.ceil(seconds),
            "The service is waiting on too many webhook receivers and name servers right "
            "now; retry shortly.",
        )
    try:
        yield
    finally:
        _process_calls.give_back()
        if key is not None:
            _store_give_back(key, token)
