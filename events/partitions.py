"""The journal's days (docs/decisions/events.md "Partitioned by day"): `events_event` and the
tables partitioned alongside it (webhook deliveries and their attempts, registered by their
app) have one partition per UTC day. Upkeep creates the days ahead; retention drops whole days
past the window, raising each store's prune mark in the same transaction (the 410 rule).
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, ProgrammingError, connection, connections, transaction
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from psycopg import errors

from core.database.partitions import (
    LOCK_TIMEOUT,
    Partition,
    day_start,
    partition_create_sql,
    partitions_list,
)
from events.models import Event

logger = logging.getLogger(__name__)

EVENTS_TABLE = Event._meta.db_table


@dataclass(frozen=True)
class Alongside:
    """A table partitioned by its event's day, with the partitions of events_event."""

    table: str
    # Runs in the drop's transaction before the day's partition of `table` goes (its name
    # given): what row deletes would have done and a drop does not (row triggers).
    before_drop: Callable[[object, str], None] | None = None


# In reference order: a table after the one it references (deliveries, then attempts).
ALONGSIDE: list[Alongside] = []


def alongside_register(table: str, before_drop: Callable[[object, str], None] | None = None):
    """Called from an AppConfig.ready (events imports no app above it)."""
    if all(entry.table != table for entry in ALONGSIDE):
        ALONGSIDE.append(Alongside(table, before_drop))


def _tables() -> list[str]:
    return [EVENTS_TABLE, *(entry.table for entry in ALONGSIDE)]


def partitions_ensure(first_day: date, last_day: date, *, using: str = DEFAULT_DB_ALIAS) -> int:
    """Creates every missing day partition from `first_day` to `last_day` (inclusive) of the
    journal and the tables alongside it; returns how many days it created. Idempotent, and safe
    to run concurrently; each day is a short transaction of its own."""
    created = 0
    day = first_day
    while day <= last_day:
        with transaction.atomic(using=using), connections[using].cursor() as cursor:
            cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
            # Runs take turns: IF NOT EXISTS does not see a table another transaction is
            # still creating, and would then fail on its name.
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext('events.partitions_ensure'))")
            missing = [
                table
                for table in _tables()
                # A legacy partition covers the days up to the day after its conversion.
                if not any(
                    p.low < day_start(day + timedelta(days=1)) and day_start(day) < p.high
                    for p in partitions_list(cursor, table)
                )
            ]
            for table in missing:
                cursor.execute(partition_create_sql(table, day))
            created += bool(missing)
        day += timedelta(days=1)
    return created


def partitions_ahead(today: date | None = None) -> int:
    """Whole days after today whose partitions exist, in every partitioned table (0 when
    tomorrow's is missing somewhere: tomorrow's first event would fail)."""
    today = today or timezone.now().date()
    with connection.cursor() as cursor:
        covered = [[(p.low, p.high) for p in partitions_list(cursor, table)] for table in _tables()]
    ahead = 0
    while all(
        any(low <= day_start(today + timedelta(days=ahead + 1)) < high for low, high in bounds)
        for bounds in covered
    ):
        ahead += 1
    return ahead


def expired_partitions(now: datetime | None = None) -> list[Partition]:
    """The journal's partitions whose every event is past retention (upper bound at least
    EVENTS_RETENTION_DAYS old), oldest first."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.EVENTS_RETENTION_DAYS)
    with connection.cursor() as cursor:
        return [p for p in partitions_list(cursor, EVENTS_TABLE) if p.high <= cutoff]


def legacy_partition() -> Partition | None:
    """The journal's rows from before it was partitioned, if that partition is still there."""
    with connection.cursor() as cursor:
        return next((p for p in partitions_list(cursor, EVENTS_TABLE) if p.day is None), None)


def partition_drop(partition: Partition, *, now: datetime, marks_raise) -> int:
    """Drops one of the journal's partitions with the same days of the tables alongside, in
    one transaction that raises the prune marks first (`marks_raise(rows, now)`, rows as
    `(event_id, store_id, txid)`): a page that read before the drop sees the raised mark on its
    second read, as with a batch delete. Returns the number of events dropped: 0 when an
    overlapping run dropped it first."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            # Overlapping runs take turns (each would otherwise read the day, then wait for
            # the other's read to end before dropping it: a deadlock); the later one finds
            # the table gone.
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext('events.partition_drop'))")
            # Before the table's lock: nothing writes to a day past retention any more.
            cursor.execute(
                f"SELECT DISTINCT ON (store_id) id, store_id, txid FROM {partition.name} "  # noqa: S608
                "ORDER BY store_id, txid DESC, id DESC"
            )
            highest = cursor.fetchall()
            cursor.execute(f"SELECT count(*) FROM {partition.name}")  # noqa: S608
            count = cursor.fetchone()[0]
            cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
            # A table with deferred checks still pending in this transaction cannot be dropped
            # (rows written earlier in it: only the suite does that).
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"LOCK TABLE {partition.name} IN ACCESS EXCLUSIVE MODE")
            marks_raise(highest, now)
            for entry in reversed(ALONGSIDE):  # attempts, deliveries: the referencing first
                # Their days match the journal's; a legacy partition's bound may end later
                # (its table converted another day): it goes with the day that covers it.
                for gone in partitions_list(cursor, entry.table):
                    if gone.high > partition.high:
                        break
                    if entry.before_drop is not None:
                        entry.before_drop(cursor, gone.name)
                    cursor.execute(f"DROP TABLE {gone.name}")
            cursor.execute(f"DROP TABLE {partition.name}")
    except ProgrammingError as error:
        if not isinstance(error.__cause__, errors.UndefinedTable):
            raise
        return 0
    logger.info("events retention: dropped %s (%d events)", partition.name, count)
    return count


def partitions_check() -> dict:
    """/status's events_partitions: fails when tomorrow has no partition somewhere (its first
    event would fail), which the hourly upkeep's EVENTS_PARTITIONS_AHEAD days should never
    let happen."""
    ahead = partitions_ahead()
    return {"status": "ok" if ahead >= 1 else "missing", "days_ahead": ahead}


class PartitionsCollector:
    """A prometheus_client collector: the days ahead with partitions, read at each scrape."""

    def collect(self):
        try:
            ahead = partitions_ahead()
        except Exception:
            logger.warning("metrics: the journal's partitions could not be read", exc_info=True)
            return
        yield GaugeMetricFamily(
            "storefront_events_partitions_ahead",
            "Whole days after today whose journal partitions (events, webhook deliveries, "
            "attempts) exist; 0 means tomorrow's first event would fail.",
            value=ahead,
        )
