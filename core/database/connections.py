"""How the app talks to PostgreSQL beyond Django (docs/decisions/hardening.md "A PostgreSQL
restart costs no read and no task", docs/decisions/layer.md "Prepared statements").

- A refused new connection (the server restarts) is tried again for up to
  DATABASE_CONNECT_RETRY_SECONDS: nothing was sent yet, so waiting is always safe.
- The per-request plain-SQL reads run as statements prepared once per session with SQL's
  PREPARE: planning cost more than running (psycopg's `prepare=True` was slower here). A
  session that lost them (DISCARD ALL) or whose plan no longer fits is prepared again outside a
  transaction. Behind PgBouncer in transaction mode set DATABASE_PREPARED_STATEMENTS=false.
- A web request's statements run under DATABASE_STATEMENT_TIMEOUT_SECONDS: the connections it
  opens carry the timeout as a startup option (no round trip), so PostgreSQL stops a statement
  past it, even when the worker that sent it is gone. Tasks, commands and migrations open
  theirs outside a request, without it.
- An idle connection the server ended has its termination message to read: each request and
  task polls for it (no round trip, unlike CONN_HEALTH_CHECKS) and drops it. A safe request
  whose connection is lost mid-query is answered again (ReadFailoverMiddleware).
"""

import contextlib
import contextvars
import logging
import math
import re
import select
import time
import weakref

from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import (
    InterfaceError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    connection,
    connections,
)

logger = logging.getLogger(__name__)

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


def _generic_plans_use(cursor) -> None:
    """Prepared statements of this session run their generic plan, never a custom one.

    A statement on the partitioned deliveries that names the partition key with a parameter
    (the outcome's `event_occurred_at = $n`) gets custom plans by default: they prune at
    planning time, so PostgreSQL keeps planning it at every execution. The generic plan prunes
    when the executor starts, from the same parameters, without planning: more deliveries a
    second (docs/benchmarks/webhooks.md "Partitioned by day"). Only statements
    prepared on the server follow the setting: the ORM's are bound on the client.
    """
    cursor.execute("SET plan_cache_mode = force_generic_plan")


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
            if not prepared:
                _generic_plans_use(cursor)
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
            _generic_plans_use(cursor)
            cursor.execute(self._prepare_sql)
            prepared.add(self.name)
            cursor.execute(self._execute_sql, params)


# --- the statement timeout of web requests ------------------------------------------------

# PostgreSQL's query_canceled: a statement stopped by statement_timeout (or a cancel request).
QUERY_CANCELED = "57014"
# A transaction PostgreSQL ended to let a concurrent one go on: deadlock_detected,
# serialization_failure. Nothing of it was saved, so the same request may be sent again.
TRANSACTION_ENDED_FOR_ANOTHER = {"40P01", "40001"}
_serving_request = contextvars.ContextVar("serving_request", default=False)


def _request_starts(**kwargs) -> None:
    _serving_request.set(True)


def _request_ends(**kwargs) -> None:
    _serving_request.set(False)


request_started.connect(_request_starts, dispatch_uid="core.database.connections.request_starts")
request_finished.connect(_request_ends, dispatch_uid="core.database.connections.request_ends")


def with_statement_timeout(conn_params: dict) -> dict:
    """`conn_params` of a connection opened by a web request, with PostgreSQL's
    statement_timeout set to DATABASE_STATEMENT_TIMEOUT_SECONDS in libpq's `options` (after
    any the URL gives). A session setting, not a per-statement SET: no round trip, and it
    outlives the request with the connection, for the next requests of the same process."""
    seconds = settings.DATABASE_STATEMENT_TIMEOUT_SECONDS
    if not seconds or not _serving_request.get():
        return conn_params
    option = f"-c statement_timeout={math.ceil(seconds * 1000)}"
    given = conn_params.get("options")
    return {**conn_params, "options": f"{given} {option}" if given else option}


def statement_timed_out(error: BaseException) -> bool:
    """Whether `error` (Django's OperationalError) is PostgreSQL stopping a statement."""
    return (
        isinstance(error, OperationalError)
        and getattr(error.__cause__, "sqlstate", None) == QUERY_CANCELED
    )


def transaction_ended_for_another(error: BaseException) -> bool:
    """Whether `error` is PostgreSQL ending this transaction in favour of a concurrent one."""
    return (
        isinstance(error, OperationalError)
        and getattr(error.__cause__, "sqlstate", None) in TRANSACTION_ENDED_FOR_ANOTHER
    )


# --- connections the server ended ---------------------------------------------------------


def _has_input(session) -> bool:
    poller = select.poll()
    poller.register(session.fileno(), select.POLLIN)
    return bool(poller.poll(0))


def ended_by_server(session) -> bool:
    """Whether the server ended `session`, an idle psycopg connection, without a round trip.

    An idle session is sent nothing unasked (we use no LISTEN; TLS records of the handshake
    were read with the first answers), so nothing to read is the answer of the usual case, and
    something to read is the server's termination message (57P01 "terminating connection due
    to administrator command", an idle-session timeout), its end of file following. Reading
    what came does not tell more: libpq takes the message in as a notice and reports the
    session alive until the end of file arrives, microseconds later."""
    return session.closed or _has_input(session)


def close_connections_the_server_ended(**kwargs) -> None:
    """Closes each open, idle connection of this thread whose server ended it: the request or
    task about to start opens a new one (waiting for a restarting server, connect_waiting)."""
    for wrapper in connections.all(initialized_only=True):
        session = wrapper.connection
        if session is None or wrapper.in_atomic_block or not ended_by_server(session):
            continue
        logger.warning(
            "database connection %s ended by the server; opening a new one", wrapper.alias
        )
        wrapper.close()


# With Django's own close_old_connections, on every request's start (tasks: config/celery.py).
request_started.connect(
    close_connections_the_server_ended, dispatch_uid="core.database.connections.ended"
)


class ReadFailoverMiddleware:
    """A safe request (RFC 9110 9.2.1: GET, HEAD, OPTIONS) whose database connection the
    server ended while a query ran is answered a second time, once, on a new connection; the
    first answer (a 500) is dropped. A read has no effect to repeat; any other method keeps
    its 500 (its effects are unknown: the client retries it with its Idempotency-Key). Last in
    MIDDLEWARE, so only the view and its process_view/process_exception hooks run again."""

    SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method not in self.SAFE_METHODS:
            return self.get_response(request)
        lost = []

        def watch(execute, sql, params, many, context):
            try:
                return execute(sql, params, many, context)
            except (OperationalError, InterfaceError):
                session = context["connection"].connection
                if session is None or session.closed:
                    lost.append(sql)
                raise

        with connection.execute_wrapper(watch):
            response = self.get_response(request)
        if not lost or connection.in_atomic_block:
            return response
        logger.warning(
            "database connection lost during %s %s (answered %s); answering again on a new one",
            request.method,
            request.path,
            response.status_code,
        )
        connection.close()
        return self.get_response(request)
