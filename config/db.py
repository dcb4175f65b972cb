"""Server-side prepared statements for the few plain-SQL reads that run on every request.

PostgreSQL plans a statement each time it receives one; the API key lookup's plan (joins, a
LATERAL subquery) took 0.16-0.23 ms of its 0.38 ms, more than running it. A statement prepared
once per database session and run with EXECUTE costs 0.14-0.16 ms (docs/benchmarks/layer.md,
issue 14). psycopg's own `prepare=True` did not win here (0.44 ms: its server-side binding
path is slower in Python for wide rows), so the statement is prepared with SQL's PREPARE and
run by Django's ordinary cursor.

A session keeps its prepared statements until it ends (a ROLLBACK does not drop them); the
statements prepared on each psycopg connection are remembered beside it, so a new connection
(CONN_MAX_AGE expiry, a reconnect) prepares again. Outside a transaction, a session that lost
its statements (DISCARD ALL by a pooler in session mode) or a statement whose plan no longer
fits (a migration changed the type of a column it returns: "cached plan must not change result
type") is prepared again and run once more; inside a transaction the error stands, as the
transaction is already aborted. PgBouncer in transaction mode can send each statement to
another server session: behind it set DATABASE_PREPARED_STATEMENTS=false, and the same SQL is
sent as is.
"""

import re
import weakref

from django.conf import settings
from django.db import NotSupportedError, ProgrammingError

_PLACEHOLDER = re.compile(r"%(?:\((\w+)\))?s")
_prepared_by_session: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# PostgreSQL's answers to EXECUTE when the session no longer has a usable statement: not
# prepared here (26000), or its cached plan's result type changed (0A000).
STATEMENT_LOST_SQLSTATES = {"26000", "0A000"}


class PreparedStatement:
    """`sql` with psycopg placeholders (all `%s`, or all `%(name)s`), run by `execute`."""

    def __init__(self, name: str, sql: str):
        self.name = name
        self.sql = sql
        names: list[str | None] = []

        def number(match: re.Match) -> str:
            names.append(match.group(1))
            return f"${len(names)}"

        self._prepare_sql = f"PREPARE {name} AS {_PLACEHOLDER.sub(number, sql)}"
        self._param_names = names if names and names[0] is not None else None
        self._execute_sql = f"EXECUTE {name}({', '.join(['%s'] * len(names))})"

    def execute(self, cursor, params: list | dict) -> None:
        """Runs the statement on `cursor` (a Django cursor on PostgreSQL), preparing it on the
        cursor's database session the first time."""
        if not settings.DATABASE_PREPARED_STATEMENTS:
            cursor.execute(self.sql, params)
            return
        session = cursor.db.connection
        prepared = _prepared_by_session.setdefault(session, set())
        if self.name not in prepared:
            cursor.execute(self._prepare_sql)
            prepared.add(self.name)
        if self._param_names is not None:
            params = [params[name] for name in self._param_names]
        try:
            cursor.execute(self._execute_sql, params)
        except (ProgrammingError, NotSupportedError) as error:
            lost = getattr(error.__cause__, "sqlstate", None) in STATEMENT_LOST_SQLSTATES
            if not lost or cursor.db.in_atomic_block:
                raise
            # Forget what this session had (a reset took all of it) and prepare afresh.
            cursor.execute("DEALLOCATE ALL")
            prepared.clear()
            cursor.execute(self._prepare_sql)
            prepared.add(self.name)
            cursor.execute(self._execute_sql, params)
