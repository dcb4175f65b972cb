"""Where an event sits in its store's journal, and when it may be served.

`txid` is the writing transaction's id (`pg_current_xact_id()`, a 64-bit epoch-extended xid8
that never wraps, kept as bigint). The journal is ordered by (txid, id) and serves only rows
whose txid is below the horizon `pg_snapshot_xmin(pg_current_snapshot())`: every transaction
below it has finished, and every transaction still running or yet to start will get a txid at
or above it, so nothing can ever appear behind a position a poller has already passed
(docs/decisions/events.md "Journal position: the transaction-id horizon").
"""

from django.db import DEFAULT_DB_ALIAS, connections, models

TRANSACTION_HORIZON = "(pg_snapshot_xmin(pg_current_snapshot())::text::bigint)"


class CurrentTransactionId(models.Func):
    """DB default of Event.txid: the inserting transaction's id."""

    template = "(pg_current_xact_id()::text::bigint)"
    output_field = models.BigIntegerField()


class TransactionHorizon(models.Func):
    """The lowest txid that may still commit: rows below it are final and visible."""

    template = TRANSACTION_HORIZON
    output_field = models.BigIntegerField()


def transaction_horizon_now(using: str = DEFAULT_DB_ALIAS) -> int:
    """The horizon of the server `using` reads from (a replica's is its replayed state: docs/
    decisions/events.md "Reads from a replica"), as a value, read in its own statement.

    Read it BEFORE the page query: every transaction below it had already finished, so its
    rows are visible to the page's (later) snapshot. A value read after the page could cover
    transactions that committed after the page's snapshot, whose rows the page never saw.
    """
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT {TRANSACTION_HORIZON}")
        return cursor.fetchone()[0]
