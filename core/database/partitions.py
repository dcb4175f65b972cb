"""Tables partitioned by UTC day (docs/decisions/events.md "Partitioned by day").

The SQL that knows only tables: a day's partition made and listed, and the conversion of a
populated table into a partitioned one, which the events and webhooks migrations run. What is
partitioned, and when a day goes, is the events app's (events/partitions.py).

A day's partition of `table` is `<table>_pYYYYMMDD`, `[day 00:00 UTC, next day 00:00 UTC)`. A
converted table keeps its rows in one partition of its own, `<table>_legacy`, for
`[its oldest row, the day after tomorrow)`; the day partitions start there.
"""

import logging
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

logger = logging.getLogger(__name__)

# How long the conversion and the upkeep wait for a lock before giving up (and being retried):
# behind a waiting ACCESS EXCLUSIVE request every reader and writer of the table queues.
LOCK_TIMEOUT = "2s"
LEGACY_SUFFIX = "_legacy"
_DAY_NAME = re.compile(r"_p(\d{8})$")
_BOUND = re.compile(r"FROM \('([^']+)'\) TO \('([^']+)'\)")


@contextmanager
def _transaction(cursor):
    """One explicit transaction on a cursor in autocommit (the migrations are not atomic, so
    their scans run outside it): committed at the end, rolled back on any error."""
    cursor.execute("BEGIN")
    try:
        yield
    except BaseException:
        cursor.execute("ROLLBACK")
        raise
    cursor.execute("COMMIT")


def day_start(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def partition_name(table: str, day: date) -> str:
    return f"{table}_p{day:%Y%m%d}"


def partition_create_sql(table: str, day: date) -> str:
    low, high = day_start(day), day_start(day + timedelta(days=1))
    return (
        f"CREATE TABLE IF NOT EXISTS {partition_name(table, day)} PARTITION OF {table} "
        f"FOR VALUES FROM ('{low.isoformat()}') TO ('{high.isoformat()}')"
    )


@dataclass(frozen=True)
class Partition:
    name: str
    low: datetime
    high: datetime
    day: date | None  # None for the legacy partition


def partitions_list(cursor, table: str) -> list[Partition]:
    """The partitions of `table`, oldest first."""
    cursor.execute(
        "SELECT child.relname, pg_get_expr(child.relpartbound, child.oid) "
        "FROM pg_inherits JOIN pg_class child ON child.oid = pg_inherits.inhrelid "
        "WHERE pg_inherits.inhparent = %s::regclass",
        [table],
    )
    found = []
    for name, bound in cursor.fetchall():
        if bound is None:  # dropped by a transaction that committed during this one
            continue
        low, high = (datetime.fromisoformat(value) for value in _BOUND.search(bound).groups())
        day = _DAY_NAME.search(name)
        found.append(
            Partition(name, low, high, datetime.strptime(day[1], "%Y%m%d").date() if day else None)
        )
    return sorted(found, key=lambda partition: partition.low)


def partitioned(cursor, table: str) -> bool:
    cursor.execute("SELECT 1 FROM pg_partitioned_table WHERE partrelid = %s::regclass", [table])
    return cursor.fetchone() is not None


def _indexes(cursor, table: str) -> list[tuple[str, str]]:
    """(name, CREATE INDEX statement) of the plain indexes of `table` (not constraints')."""
    cursor.execute(
        "SELECT index.relname, pg_get_indexdef(pg_index.indexrelid) FROM pg_index "
        "JOIN pg_class index ON index.oid = pg_index.indexrelid "
        "WHERE pg_index.indrelid = %s::regclass AND NOT EXISTS "
        "(SELECT 1 FROM pg_constraint WHERE conindid = pg_index.indexrelid)",
        [table],
    )
    return cursor.fetchall()


def _constraints(cursor, table: str, kinds: str) -> list[tuple[str, str, str]]:
    """(name, kind, definition) of `table`'s constraints of the kinds given (pg_constraint
    contype letters: p primary key, u unique, f foreign key, c check)."""
    cursor.execute(
        "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = %s::regclass AND contype = ANY(%s)",
        [table, list(kinds)],
    )
    return cursor.fetchall()


def table_partition_by_day(
    cursor,
    *,
    table: str,
    key: str,
    primary_key: str = "id",
    days_ahead: int,
    before_swap: tuple[str, ...] = (),
    after_swap: tuple[str, ...] = (),
) -> float:
    """Converts `table` into a table partitioned by day on `key`, in a migration that is not
    atomic (`cursor` in autocommit); returns the seconds `table` was locked.

    Writers go on during the scans: the bound check is validated and the new primary key
    (`primary_key`, `key`) built concurrently first. Then one short transaction renames the
    table to `<table>_legacy`, creates the partitioned table with the same columns, defaults,
    checks, indexes and foreign keys under their old names, and attaches the legacy table as
    its first partition: PostgreSQL adopts the legacy's equivalent indexes and constraints
    instead of building them, and trusts the validated check instead of scanning. An empty
    table is replaced instead (nothing to keep). `before_swap` runs first in that transaction
    (on the old table), `after_swap` last (on the new one): the caller's triggers.
    """
    cursor.execute(f"SELECT min({key}) FROM {table}")  # noqa: S608 (identifiers of ours)
    oldest = cursor.fetchone()[0]
    if oldest is not None:  # whole days: the legacy range ends and starts at a day's edge
        oldest = day_start(oldest.astimezone(UTC).date())
    today = datetime.now(UTC).date()
    legacy_high = day_start(today + timedelta(days=2))
    legacy = f"{table}{LEGACY_SUFFIX}"
    if oldest is not None:
        bound = f"{table}_legacy_bound"
        # Each step can be run again after an interruption (a lock timeout in the swap).
        cursor.execute(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {bound}")
        cursor.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT {bound} CHECK ({key} IS NOT NULL AND "
            f"{key} >= '{oldest.isoformat()}' AND {key} < '{legacy_high.isoformat()}') NOT VALID"
        )
        cursor.execute(f"ALTER TABLE {table} VALIDATE CONSTRAINT {bound}")
        cursor.execute(
            f"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {table}_legacy_key "
            f"ON {table} ({primary_key}, {key})"
        )
    started = time.monotonic()
    with _transaction(cursor):
        cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        cursor.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        for statement in before_swap:
            cursor.execute(statement)
        _swap(cursor, table=table, key=key, primary_key=primary_key, keep=oldest is not None)
        if oldest is None:
            first_day = today
        else:
            cursor.execute(
                f"ALTER TABLE {table} ATTACH PARTITION {legacy} FOR VALUES FROM "
                f"('{oldest.isoformat()}') TO ('{legacy_high.isoformat()}')"
            )
            first_day = legacy_high.date()
        for offset in range((today + timedelta(days=days_ahead) - first_day).days + 1):
            cursor.execute(partition_create_sql(table, first_day + timedelta(days=offset)))
        for statement in after_swap:
            cursor.execute(statement)
    locked = time.monotonic() - started
    logger.info("%s partitioned by day on %s: locked for %.0f ms", table, key, locked * 1000)
    return locked


def _aside(cursor, *, table: str, suffix: str, indexes, constraints) -> None:
    """Renames `table` to `<table><suffix>`, and its indexes and unique constraints likewise
    (their names are schema-wide): the names are free for the table that takes its place."""
    cursor.execute(f"ALTER TABLE {table} RENAME TO {table}{suffix}")
    for name, _ in indexes:
        cursor.execute(f"ALTER INDEX {name} RENAME TO {name[:56]}{suffix}")
    for name, kind, _ in constraints:
        if kind == "u":
            cursor.execute(
                f"ALTER TABLE {table}{suffix} RENAME CONSTRAINT {name} TO {name[:56]}{suffix}"
            )


def _swap(cursor, *, table: str, key: str, primary_key: str, keep: bool) -> None:
    """Renames `table` and its index-backed names to the legacy ones and creates the
    partitioned `table` in its place, with every name the models' migrations know. An identity
    column (PostgreSQL 15 refuses one on a partitioned table) becomes a sequence default that
    goes on from where the identity was."""
    legacy = f"{table}{LEGACY_SUFFIX}"
    # The new key built for the legacy partition is not one of the table's own indexes.
    indexes = [index for index in _indexes(cursor, table) if index[0] != f"{table}_legacy_key"]
    constraints = _constraints(cursor, table, "pufc")
    cursor.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attidentity <> ''",
        [table],
    )
    identities = {}
    for (column,) in cursor.fetchall():
        cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, %s))", [table, column])
        identities[column] = cursor.fetchone()[0]
    _aside(cursor, table=table, suffix=LEGACY_SUFFIX, indexes=indexes, constraints=constraints)
    for column in identities:
        cursor.execute(f"ALTER TABLE {legacy} ALTER COLUMN {column} DROP IDENTITY")
    for name, kind, _ in constraints:
        if kind == "p":
            cursor.execute(f"ALTER TABLE {legacy} DROP CONSTRAINT {name}")
    if keep:
        cursor.execute(
            f"ALTER TABLE {legacy} ADD CONSTRAINT {legacy}_pkey "
            f"PRIMARY KEY USING INDEX {table}_legacy_key"
        )
    cursor.execute(
        f"CREATE TABLE {table} (LIKE {legacy} INCLUDING DEFAULTS INCLUDING CONSTRAINTS) "
        f"PARTITION BY RANGE ({key})"
    )
    for column, start in identities.items():
        sequence = f"{table}_{column}_seq"
        cursor.execute(f"CREATE SEQUENCE {sequence} START {start} OWNED BY {table}.{column}")
        cursor.execute(
            f"ALTER TABLE {table} ALTER COLUMN {column} SET DEFAULT nextval('{sequence}')"
        )
    cursor.execute(
        f"ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY ({primary_key}, {key})"
    )
    for name, kind, definition in constraints:
        if kind == "c" and name.endswith("_legacy_bound"):
            cursor.execute(f"ALTER TABLE {table} DROP CONSTRAINT {name}")
        elif kind in "uf":
            # On the empty parent: instant. ATTACH then adopts the legacy's equal ones.
            cursor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} {definition}")
    for _, statement in indexes:  # CREATE INDEX <name> ON public.<table>: now the parent
        cursor.execute(statement)
    if not keep:
        cursor.execute(f"DROP TABLE {legacy}")


def table_unpartition(
    cursor,
    *,
    table: str,
    primary_key: str = "id",
    before_swap: tuple[str, ...] = (),
    after_swap: tuple[str, ...] = (),
) -> None:
    """The reverse of `table_partition_by_day` (a migration rolled back): a plain `table` with
    the rows of every partition, its primary key back on `primary_key` alone, and the same
    names. It copies the rows under the lock: for a rollback, not for a live journal."""
    with _transaction(cursor):
        cursor.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        for statement in before_swap:
            cursor.execute(statement)
        indexes = _indexes(cursor, table)
        constraints = _constraints(cursor, table, "uf")
        cursor.execute("SELECT pg_get_serial_sequence(%s, %s) IS NOT NULL", [table, primary_key])
        sequence = cursor.fetchone()[0]
        parted = f"{table}_parted"
        _aside(cursor, table=table, suffix="_parted", indexes=indexes, constraints=constraints)
        cursor.execute(f"ALTER TABLE {parted} DROP CONSTRAINT {table}_pkey")
        cursor.execute(
            f"CREATE TABLE {table} (LIKE {parted} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)"
        )
        cursor.execute(f"INSERT INTO {table} SELECT * FROM {parted}")  # noqa: S608
        cursor.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY ({primary_key})"
        )
        for name, _kind, definition in constraints:
            cursor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} {definition}")
        for _, statement in indexes:
            cursor.execute(statement)
        if sequence:  # the sequence default goes with the partitioned table: identity again
            cursor.execute(f"ALTER TABLE {table} ALTER COLUMN {primary_key} DROP DEFAULT")
            cursor.execute(f"DROP TABLE {parted}")
            cursor.execute(
                f"SELECT coalesce(max({primary_key}), 0) + 1 FROM {table}"  # noqa: S608
            )
            start = cursor.fetchone()[0]
            cursor.execute(
                f"ALTER TABLE {table} ALTER COLUMN {primary_key} "
                f"ADD GENERATED BY DEFAULT AS IDENTITY (START WITH {start})"
            )
        else:
            cursor.execute(f"DROP TABLE {parted}")
        for statement in after_swap:
            cursor.execute(statement)
