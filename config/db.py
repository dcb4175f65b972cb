"""How the app talks to PostgreSQL beyond Django: opening a connection while the server
restarts, and server-side prepared statements for the few plain-SQL reads of every request.

A new connection that the server refuses (it is restarting, shutting down or starting up, or a
failover moves it) is tried again for up to DATABASE_CONNECT_RETRY_SECONDS before the request
fails: nothing was sent yet, so waiting is always safe, and a restart of a second or two then
costs each web process only the request that was using the old connection, not every request
that arrives meanwhile (tests/faults/test_postgresql.py: 3 failed requests per client in 0.2 s
of a fast restart before, docs/benchmarks/faults-postgresql.md).

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

import contextlib
import contextvars
import re
import time
import weakref

from django.conf import settings
from django.db import NotSupportedError, ProgrammingError

_PLACEHOLDER = re.compile(r"%(?:\((\w+)\))?s")
_prepared_by_session: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# PostgreSQL's answers to EXECUTE when the session no longer has a usable statement: not
# prepared here (26000), or its cached plan's result type changed (0A000).
STATEMENT_LOST_SQLSTATES = {"26000", "0A000"}


# Pauses between two connection attempts: short first (a restart takes a fraction of a second
# on an idle server), then at most this.
CONNECT_FIRST_PAUSE = 0.05
CONNECT_LONGEST_PAUSE = 0.5
_waiting_for_server = contextvars.ContextVar("waiting_for_server", default=True)


@contextlib.contextmanager
def connecting_without_waiting():
    """Connections opened inside fail at the first refusal: the health probes report a
    database that is down within their own time budget instead of waiting for it."""
    token = _waiting_for_server.set(False)
    try:
        yield
    finally:
        _waiting_for_server.reset(token)


def connect_waiting(connect, conn_params: dict, *, error: type[Exception]):
    """`connect(conn_params)`, tried again on `error` (the driver's OperationalError) until
    DATABASE_CONNECT_RETRY_SECONDS have passed; then the last error is raised."""
    waiting = settings.DATABASE_CONNECT_RETRY_SECONDS if _waiting_for_server.get() else 0
    deadline = time.monotonic() + waiting
    pause = CONNECT_FIRST_PAUSE
    while True:
        try:
            return connect(conn_params)
        except error:
            if time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, CONNECT_LONGEST_PAUSE)


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
