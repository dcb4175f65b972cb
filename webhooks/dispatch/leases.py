"""Leases kept alive while their holder lives (docs/decisions/hardening.md, Hardening IV 12).

A send holds leases: its send slots (webhooks/dispatch/slots.py), its claimed delivery, and a
running drain its channel's drain marker (webhooks/dispatch/queueing.py). They are taken short, for
`live_seconds()` (3 heartbeats), and this process renews them every WEBHOOKS_HEARTBEAT_SECONDS from
a thread of its own while it holds them. A worker killed with kill -9 renews nothing more: its
leases run out within seconds, and another worker takes over. A live holder is never overtaken: a
renewal only extends a lease that has not run out, and no lease is renewed past
`WEBHOOKS_LEASE_SECONDS` after it was taken, the bound the system check webhooks.E001 keeps beyond
the sending tasks' hard time limit, at which the pool kills the process and with it this thread."""

import contextlib
import logging
import os
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


# One round trip renews every slot and delivery lease of this process. Slot leases are in the
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
    """The leases this process holds, renewed by one thread while there are any."""

    def __init__(self):
        self._lock = threading.Lock()
        self._tokens: dict[uuid.UUID, datetime] = {}  # lease token -> renewed at most until
        self._markers: dict[str, datetime] = {}  # cache key -> renewed at most until
        self._wake = threading.Event()  # something is held again: the thread starts renewing
        self._heartbeat = threading.Event()  # set early by forget_all
        self._idle = threading.Event()  # nothing held, and the thread's connection closed
        self._idle.set()
        self._pid = None

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

    def forget_all(self, *, wait: float = 0) -> bool:
        """Stops renewing anything, as a dead holder does (the test suite's clean slate, and
        before its database goes away); waits up to `wait` s for the thread's connection to
        close, and says whether it did."""
        with self._lock:
            self._tokens.clear()
            self._markers.clear()
        self._heartbeat.set()
        return self._idle.wait(wait)

    def _add(self, held: dict, key, taken_at: datetime) -> None:
        cap = taken_at + timedelta(seconds=settings.WEBHOOKS_LEASE_SECONDS)
        with self._lock:
            held[key] = cap
            # A thread per process: a forked pool child does not inherit its parent's.
            if self._pid != os.getpid():
                self._pid = os.getpid()
                self._idle.set()
                threading.Thread(target=self._run, name="webhooks-leases", daemon=True).start()
            if self._idle.is_set():
                self._idle.clear()
                self._wake.set()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            while True:
                try:
                    # A lease is fresh when taken: the first renewal is a heartbeat later.
                    self._heartbeat.wait(settings.WEBHOOKS_HEARTBEAT_SECONDS)
                    self._heartbeat.clear()
                    renewed = self._renew()
                except Exception:
                    # Never the end of this thread, or every lease it holds would lapse: what
                    # was not renewed now is on the next beat (leases last three).
                    logger.warning("webhooks: leases not renewed", exc_info=True)
                    self._heartbeat.wait(1)
                    renewed = True
                if renewed:
                    continue
                # Nothing held: this thread's database connection is not kept open meanwhile.
                connection.close()
                with self._lock:
                    if not (self._tokens or self._markers):
                        self._idle.set()
                        break

    def _renew(self) -> bool:
        """Renews what is held; False when nothing is."""
        now = timezone.now()
        with self._lock:
            for held in (self._tokens, self._markers):
                for key in [key for key, cap in held.items() if cap <= now]:
                    del held[key]  # past its bound: it cannot be renewed any more
            tokens = dict(self._tokens)
            markers = dict(self._markers)
        if not (tokens or markers):
            return False
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
        return True


keeper = LeaseKeeper()
