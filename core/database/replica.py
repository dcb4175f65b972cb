"""Reads that may go to a streaming replica (DATABASE_REPLICA_URL): the event journal's pages
and the delivery history (docs/decisions/events.md "Reads from a replica").

`ReplicaRouter` sends the reads made inside `read_preferring_replica` to DATABASES["replica"]
when one statement (`replica_state`) finds it configured, answering and within
DATABASE_REPLICA_MAX_LAG_SECONDS; otherwise they go to the primary. A replica that does not
answer is not asked again for DATABASE_REPLICA_RETRY_SECONDS (per process).
"""

import contextvars
import logging
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import (
    DEFAULT_DB_ALIAS,
    DatabaseError,
    InterfaceError,
    OperationalError,
    connections,
)

from core.database.connections import connecting_without_waiting

REPLICA = "replica"

logger = logging.getLogger(__name__)

# On a hot standby, pg_current_snapshot() is the replayed state: its xmin is the lowest
# transaction the replica still sees running (events/positions.py reads the same on the
# primary). Lag: 0 when everything received is replayed (an idle primary sends nothing, and
# the last replayed commit's age would grow without any lag), else the age of that commit;
# unknown (NULL: not used) while WAL waits and no commit has been replayed since the start.
_STATE_SQL = """
SELECT pg_is_in_recovery(),
       CASE WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn()
            THEN 0
            ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp())
       END::float8,
       pg_snapshot_xmin(pg_current_snapshot())::text::bigint
"""


@dataclass(frozen=True)
class ReplicaState:
    lag_seconds: float | None  # None: unknown
    # The replica's own transaction horizon: every transaction below it has finished and is
    # replayed there, so the replica has all of their rows.
    horizon: int

    @property
    def usable(self) -> bool:
        lag = self.lag_seconds
        return lag is not None and lag <= settings.DATABASE_REPLICA_MAX_LAG_SECONDS


class ReplicaUnavailable(Exception):
    """The replica did not answer, or is not a standby (a promoted one is not replaying)."""


def replica_configured() -> bool:
    return REPLICA in settings.DATABASES


def replica_state() -> ReplicaState:
    """Where the replica stands now; raises ReplicaUnavailable. Opens no waiting connection:
    a replica that refuses it is reported at once (core/database/connections.py)."""
    connection = connections[REPLICA]
    try:
        with connecting_without_waiting(), connection.cursor() as cursor:
            cursor.execute(_STATE_SQL)
            in_recovery, lag, horizon = cursor.fetchone()
    except DatabaseError as error:
        # Dropped, so the next use opens a new one instead of reusing a broken connection.
        connection.close()
        raise ReplicaUnavailable(str(error)) from error
    if not in_recovery:
        raise ReplicaUnavailable("the replica is not in recovery (promoted?)")
    return ReplicaState(lag_seconds=None if lag is None else max(0.0, lag), horizon=horizon)


_down_until = 0.0


def replica_failed(error: BaseException) -> None:
    """Skips the replica for DATABASE_REPLICA_RETRY_SECONDS after `error` (logged once)."""
    global _down_until
    retry = settings.DATABASE_REPLICA_RETRY_SECONDS
    if time.monotonic() >= _down_until:
        logger.warning("replica: reads go to the primary for %ss: %s", retry, error)
    _down_until = time.monotonic() + retry
    connections[REPLICA].close()


def usable_replica() -> ReplicaState | None:
    """The replica's state if reads may go there now: configured, answering, and no further
    behind than DATABASE_REPLICA_MAX_LAG_SECONDS; else None (read from the primary)."""
    if not replica_configured() or time.monotonic() < _down_until:
        return None
    try:
        state = replica_state()
    except ReplicaUnavailable as error:
        replica_failed(error)
        return None
    return state if state.usable else None


_reads_from = contextvars.ContextVar("replica_reads_from", default=None)


def read_preferring_replica(read, *, serves=lambda state: True):
    """`read(alias)` on the replica if it is usable now (`usable_replica`) and `serves(state)`,
    else on the primary. Inside, ReplicaRouter sends every read to that alias too; writes
    always go to the primary. A replica that fails during the read (it stopped, or cancelled
    the query for a replay conflict) is skipped, and the read runs again on the primary: it
    only reads, so running it twice is safe."""
    state = usable_replica()
    if state is not None and serves(state):
        token = _reads_from.set(REPLICA)
        try:
            return read(REPLICA)
        except (OperationalError, InterfaceError) as error:
            replica_failed(error)
        finally:
            _reads_from.reset(token)
    return read(DEFAULT_DB_ALIAS)


class ReplicaRouter:
    """DATABASE_ROUTERS: the replica for the reads inside `read_preferring_replica` that chose
    it; elsewhere no opinion (Django then reads where the instance came from, or the primary)."""

    def db_for_read(self, model, **hints):
        return _reads_from.get()

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        # A standby is read-only and replays the primary's schema.
        return db != REPLICA
