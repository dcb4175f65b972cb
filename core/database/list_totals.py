"""Per-store totals of the big lists, kept exact by statement-level PostgreSQL triggers: an
O(1) `meta.total` instead of counting a store's rows. `ListTotals` gives the SQL of the triggers
(created by the owning app's migration), their backfill and the reconciliation. The rules the
SQL keeps and their costs: docs/decisions/coupons.md "List growth".
"""

from dataclasses import dataclass

from django.db import connection

# Each counted table has one trigger (and function) per event, named <table>_totals_<event>.
TRIGGER_EVENTS = ("insert", "update", "delete", "truncate")


@dataclass(frozen=True)
class ListTotals:
    table: str  # the counted table
    totals_table: str  # its totals: store_id (primary key) and one bigint per counter
    counters: tuple[tuple[str, str], ...]  # (counter column, SQL condition on a counted row)
    # The counters depend on no column an UPDATE may change, and a row never changes store:
    # no UPDATE trigger (none of its cost on every update), and a row-level guard refuses an
    # UPDATE of store_id instead.
    store_fixed: bool = False

    @property
    def _columns(self) -> str:
        return ", ".join(column for column, _ in self.counters)

    def _counts(self, rows: str, sign: str = "") -> str:
        """Per store: the store id and each counter's count among `rows` (a table or a
        transition table, with its WHERE clause if any)."""
        counts = ", ".join(
            f"{sign}COUNT(*) FILTER (WHERE {condition}) AS {column}"
            for column, condition in self.counters
        )
        return f"SELECT store_id, {counts} FROM {rows} GROUP BY store_id"  # noqa: S608

    def _upsert(self, select: str) -> str:
        added = ", ".join(
            f"{column} = {self.totals_table}.{column} + EXCLUDED.{column}"
            for column, _ in self.counters
        )
        return (
            f"INSERT INTO {self.totals_table} (store_id, {self._columns}) {select} "
            f"ON CONFLICT (store_id) DO UPDATE SET {added}"
        )

    def _function(self, event: str, body: str) -> str:
        return (
            f"CREATE FUNCTION {self.table}_totals_{event}() RETURNS trigger "
            f"LANGUAGE plpgsql AS $$ BEGIN {body} RETURN NULL; END $$"
        )

    def create_sql(self) -> list[str]:
        """The trigger functions and triggers; then `backfill_sql` in the same transaction."""
        on_insert = self._upsert(f"{self._counts('new_rows')} ORDER BY store_id") + ";"
        net = ", ".join(f"SUM({column})::bigint" for column, _ in self.counters)
        changed = " OR ".join(f"SUM({column}) <> 0" for column, _ in self.counters)
        changes = f"{self._counts('new_rows')} UNION ALL {self._counts('old_rows', '-')}"
        net_changes = (
            f"SELECT store_id, {net} FROM ({changes}) AS changes "  # noqa: S608
            f"GROUP BY store_id HAVING {changed} ORDER BY store_id"
        )
        # Most updates change no total: they do not touch the totals table at all (no lock).
        on_update = f"IF EXISTS ({net_changes}) THEN {self._upsert(net_changes)}; END IF;"
        on_delete = "".join(
            f"{statement}; " for statement in self._subtract_sql("old_rows", lock="PERFORM 1")
        )
        on_truncate = f"DELETE FROM {self.totals_table};"  # noqa: S608
        trigger = f"CREATE TRIGGER {self.table}_totals_%s AFTER %s ON {self.table} "
        function = f"FOR EACH STATEMENT EXECUTE FUNCTION {self.table}_totals_%s()"
        if self.store_fixed:
            # Evaluated by the WHEN clause per row, the function called only for a move.
            update_function = self._function(
                "update",
                f"RAISE EXCEPTION 'the store of a {self.table} row cannot change' "
                "USING ERRCODE = 'integrity_constraint_violation';",
            )
            update_trigger = (
                f"CREATE TRIGGER {self.table}_totals_update BEFORE UPDATE OF store_id "
                f"ON {self.table} FOR EACH ROW "
                "WHEN (OLD.store_id IS DISTINCT FROM NEW.store_id) "
                f"EXECUTE FUNCTION {self.table}_totals_update()"
            )
        else:
            update_function = self._function("update", on_update)
            update_trigger = (
                trigger % ("update", "UPDATE")
                + "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows "
                + function % "update"
            )
        return [
            self._function("insert", on_insert),
            update_function,
            self._function("delete", on_delete),
            self._function("truncate", on_truncate),
            trigger % ("insert", "INSERT")
            + "REFERENCING NEW TABLE AS new_rows "
            + function % "insert",
            update_trigger,
            trigger % ("delete", "DELETE")
            + "REFERENCING OLD TABLE AS old_rows "
            + function % "delete",
            trigger % ("truncate", "TRUNCATE") + function % "truncate",
        ]

    def _subtract_sql(self, rows: str, *, lock: str) -> tuple[str, str]:
        """Lowers the totals by the rows of `rows` (a table or a transition table): a statement
        locking the stores' totals in store order first (as every writer does: no deadlock),
        then the update."""
        subtracted = ", ".join(
            f"{column} = totals.{column} - gone.{column}" for column, _ in self.counters
        )
        return (
            f"{lock} FROM {self.totals_table} WHERE store_id IN "  # noqa: S608
            f"(SELECT store_id FROM {rows}) ORDER BY store_id FOR UPDATE",
            f"UPDATE {self.totals_table} AS totals SET {subtracted} "  # noqa: S608
            f"FROM ({self._counts(rows)}) AS gone WHERE totals.store_id = gone.store_id",
        )

    def partition_drop_sql(self, partition: str) -> tuple[str, str]:
        """What the delete trigger would do for every row of `partition`, which is about to be
        dropped (a drop fires no trigger): run in the drop's transaction, before it."""
        return self._subtract_sql(partition, lock="SELECT 1")

    def drop_sql(self) -> list[str]:
        return [
            *(f"DROP TRIGGER {self.table}_totals_{e} ON {self.table}" for e in TRIGGER_EVENTS),
            *(f"DROP FUNCTION {self.table}_totals_{e}()" for e in TRIGGER_EVENTS),
        ]

    def backfill_sql(self) -> str:
        """Every store's totals from its rows (into an empty totals table)."""
        return (
            f"INSERT INTO {self.totals_table} (store_id, {self._columns}) "
            f"{self._counts(self.table)}"
        )

    def recount(self, *, store_id: int | None = None) -> list[dict]:
        """Recomputes and repairs the totals (every store's, or one store's) inside a
        transaction; returns one `{store_id, counter, stored, actual}` per wrong counter.

        EXCLUSIVE waits for the writers whose triggers ran and holds the others at theirs;
        readers pass. Not SHARE ROW EXCLUSIVE: a delete's trigger takes FOR UPDATE (ROW SHARE,
        which that mode lets through) and would deadlock with the repair of the same row.
        """
        where = "WHERE store_id = %(store)s" if store_id is not None else ""
        columns = [column for column, _ in self.counters]
        with connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {self.totals_table} IN EXCLUSIVE MODE")
            cursor.execute(
                f"SELECT store_id, {self._columns} FROM {self.totals_table} {where}",  # noqa: S608
                {"store": store_id},
            )
            stored = {row[0]: row[1:] for row in cursor.fetchall()}
            cursor.execute(self._counts(f"{self.table} {where}"), {"store": store_id})
            actual = {row[0]: row[1:] for row in cursor.fetchall()}
            zero = (0,) * len(columns)
            drift = [
                {"store_id": store, "counter": column, "stored": was, "actual": now}
                for store in sorted(stored.keys() | actual.keys())
                for column, was, now in zip(
                    columns, stored.get(store, zero), actual.get(store, zero), strict=True
                )
                if was != now
            ]
            assignments = ", ".join(f"{column} = EXCLUDED.{column}" for column in columns)
            for store in sorted({entry["store_id"] for entry in drift}):
                values = actual.get(store, zero)
                cursor.execute(
                    f"INSERT INTO {self.totals_table} (store_id, {self._columns}) "  # noqa: S608
                    f"VALUES (%s, {', '.join(['%s'] * len(columns))}) "
                    f"ON CONFLICT (store_id) DO UPDATE SET {assignments}",
                    [store, *values],
                )
        return drift


# The maintained totals by the name `manage.py recount_lists` reports them under. Each owning
# app registers its own in AppConfig.ready, so the command (a stores command) imports no app
# above stores (docs/decisions/layer.md "A layered house").
registered: dict[str, ListTotals] = {}
