"""Leases kept alive while their holder lives (docs/decisions/hardening.md, Hardening IV 12).

A send holds leases: its send slots (webhooks/slots.py), its claimed delivery, and a running
drain its channel's drain marker (webhooks/queueing.py). They are taken short, for
`live_seconds()` (3 heartbeats), and the sending call renews them every
WEBHOOKS_HEARTBEAT_SECONDS from a thread of its own while it holds them (a LeaseKeeper, one per
call, passed down to what takes them). A worker killed with kill -9 renews nothing more: its
leases run out within seconds, and another worker takes over.
A live holder is never overtaken: a renewal only extends a lease that has not run out, and no
lease is renewed past `WEBHOOKS_LEASE_SECONDS` after it was taken, the bound the system check
webhooks.E001 keeps beyond the sending tasks' hard time limit, at which the pool kills the
process and with it this thread.
"""

import contextlib
import logging
import threading
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.utils import timezone

logger = logging.getLogger(__name__)


def live_seconds() -> float:
    """How long a lease lasts unless renewed: three heartbeats, so one late renewal is no loss;
    never more than WEBHOOKS_LEASE_SECONDS."""
    return min(3 * settings.WEBHOOKS_HEARTBEAT_SECONDS, settings.WEBHOOKS_LEASE_SECONDS)


# One round trip renews every slot and delivery lease of a call. Slot leases are in the
# database's clock (as their take), delivery leases in the workers' (as their claim).
RENEW_SQL = """
WITH held AS (
    SELECT * FROM unnest(%(tokens)s::uuid[], %(caps)s::timestamptz[]) AS held(token, cap)
), slots AS (
    UPDATE webhooks_webhooksendslot AS slot
    SET lease_until = LEAST(now() + %(live)s, held.cap)
    FROM held WHERE slot.lease_token = held.token AND slot.lease_until >= now()
)
UPDATE webhooks_webhookdelivery AS delivery
SET lease_until = LEAST(%(until)s, held.cap)
FROM held WHERE delivery.lease_token = held.token AND delivery.lease_until >= %(now)s
"""


class LeaseKeeper:
    """Renews the leases one sending call takes, from a thread that lives no longer than the
    call: `with LeaseKeeper() as leases: ...` (attempts.delivery_send, .channel_drain).

    The thread starts with the first `hold` (a drain refused its slots starts none), and on
    leaving the block it stops and closes its own database connection: nothing outlives the
    call. What is still held then is renewed no more and runs out, as a dead worker's does.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._tokens: dict[uuid.UUID, datetime] = {}  # lease token -> renewed at most until
        self._markers: dict[str, datetime] = {}  # cache key -> renewed at most until
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "LeaseKeeper":
        return self

    def __exit__(self, *exc_info) -> None:
        with self._lock:
            self._tokens.clear()
            self._markers.clear()
            self._stop.set()
            thread = self._thread
        if thread is not None:
            thread.join()  # at most one renewal round trip away

    def hold(self, token: uuid.UUID, *, taken_at: datetime) -> None:
        """Renews the slot or delivery leases taken with `token` until `drop(token)`."""
        self._add(self._tokens, token, taken_at)

    def hold_marker(self, key: str, *, taken_at: datetime) -> None:
        """Renews the cache key `key` (set for live_seconds()) until `drop_marker(key)`."""
        self._add(self._markers, key, taken_at)

    def drop(self, token: uuid.UUID | None) -> None:
        with self._lock:
            self._tokens.pop(token, None)

    def drop_marker(self, key: str) -> None:
        with self._lock:
            self._markers.pop(key, None)

    def _add(self, held: dict, key, taken_at: datetime) -> None:
        cap = taken_at + timedelta(seconds=settings.WEBHOOKS_LEASE_SECONDS)
        with self._lock:
            if self._stop.is_set():
                return  # the call is over: nobody renews
            held[key] = cap
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="webhooks-leases", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        try:
            # A lease is fresh when taken: the first renewal is a heartbeat later.
            while not self._stop.wait(settings.WEBHOOKS_HEARTBEAT_SECONDS):
                try:
                    self._renew()
                except Exception:
                    # Never the end of this thread, or every lease it holds would lapse: what
                    # was not renewed now is on the next beat (leases last three).
                    logger.warning("webhooks: leases not renewed", exc_info=True)
        finally:
            connection.close()  # this thread's own, before the call returns

    def _renew(self) -> None:
        now = timezone.now()
        with self._lock:
            for held in (self._tokens, self._markers):
                for key in [key for key, cap in held.items() if cap <= now]:
                    del held[key]  # past its bound: it cannot be renewed any more
            tokens = dict(self._tokens)
            markers = dict(self._markers)
        live = timedelta(seconds=live_seconds())
        try:
            if tokens:
                with connection.cursor() as cursor:
                    cursor.execute(
                        RENEW_SQL,
                        {
                            "tokens": list(tokens),
                            "caps": list(tokens.values()),
                            "live": live,
                            "until": now + live,
                            "now": now,
                        },
                    )
            for key in markers:
                with contextlib.suppress(Exception):  # no cache: the sweeper catches up
                    cache.touch(key, live.total_seconds())
        except Exception:
            # A broken connection (a database restart): a new one on the next heartbeat; the
            # leases are three heartbeats long.
            logger.warning("webhooks: leases not renewed", exc_info=True)
            connection.close()
