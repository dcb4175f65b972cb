"""Where an event sits in its store's journal, and when it may be served.

PostgreSQL (tests, production): `txid` is the writing transaction's id
(`pg_current_xact_id()`, a 64-bit epoch-extended xid8 that never wraps, kept as bigint). The
journal is ordered by (txid, id) and serves only rows whose txid is below the horizon
`pg_snapshot_xmin(pg_current_snapshot())`: every transaction below it has finished, and every
transaction still running or yet to start will get a txid at or above it, so nothing can ever
appear behind a position a poller has already passed. See docs/decisions/events.md.

SQLite (`make run` only): one writer at a time holds the database write lock from its first
write to COMMIT, so `txid` is a commit-order counter (MAX + 1 read inside the INSERT, under
that lock) and every committed row is servable; there is no horizon.
"""

from django.db import connection, models
from django.db.models.expressions import RawSQL


class CurrentTransactionId(models.Func):
    """DB default of Event.txid: the inserting transaction's id on PostgreSQL."""

    output_field = models.BigIntegerField()

    def as_sql(self, compiler, connection, **extra_context):
        # SQLite rows get an explicit commit-order value from `record` (see module docstring).
        return "0", []

    def as_postgresql(self, compiler, connection, **extra_context):
        return "(pg_current_xact_id()::text::bigint)", []


class TransactionHorizon(models.Func):
    """The lowest txid that may still commit: rows below it are final and visible."""

    output_field = models.BigIntegerField()

    def as_sql(self, compiler, connection, **extra_context):
        raise NotImplementedError("the transaction horizon exists on PostgreSQL only")

    def as_postgresql(self, compiler, connection, **extra_context):
        return "(pg_snapshot_xmin(pg_current_snapshot())::text::bigint)", []


def uses_transaction_horizon() -> bool:
    return connection.vendor == "postgresql"


def transaction_horizon_now() -> int:
    """The horizon as a value, read in its own statement.

    Read it BEFORE the page query: every transaction below it had already finished, so its
    rows are visible to the page's (later) snapshot. A value read after the page could cover
    transactions that committed after the page's snapshot, whose rows the page never saw.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")
        return cursor.fetchone()[0]


def txid_for_insert(event_model):
    """What `record` passes as txid: None (the DB default) on PostgreSQL; elsewhere a
    commit-order counter evaluated inside the INSERT statement, i.e. under SQLite's write lock."""
    if uses_transaction_horizon():
        return None
    table = connection.ops.quote_name(event_model._meta.db_table)
    return RawSQL(f"(SELECT COALESCE(MAX(txid), 0) + 1 FROM {table})", [])  # noqa: S608, S611
