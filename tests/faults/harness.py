"""Servers, a load loop and fault injections for the database fault tests.

Everything runs on loopback against a throwaway PostgreSQL of the tests' own (`own_postgresql`,
in bin/with-test-services' STOREFRONT_TEST_WORKDIR): gunicorn under the production settings,
PgBouncer in transaction mode, and client threads that each keep one HTTP session
("connection") and mix reads with idempotent writes retried under their own key until they get
an answer.
"""

import contextlib
import dataclasses
import os
import re
import shutil
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import psycopg
import requests
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection

from devtools.postgres_server import USER, PostgresServer
from tests.servers import Gunicorn, debian_bin, free_port

# Bounds of every run: the whole fault file stays well under two minutes.
REQUEST_TIMEOUT = 10.0
# A write is retried with the same Idempotency-Key this long after its first attempt at most.
WRITE_RETRY_SECONDS = 15.0
WRITE_RETRY_PAUSE = 0.2
CLIENT_PAUSE = 0.02  # between two requests of one client: a steady load, not a flood


# --- PostgreSQL faults -------------------------------------------------------------------------


@contextlib.contextmanager
def own_postgresql(django_db_blocker) -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL for the faults to restart, never the suite's (tests beside these
    use it): started through devtools/postgres_server.py, the test database created and migrated
    on it, and Django's connection pointed at it inside (at the suite's again after). Commits
    stay durable (synchronous_commit on, as production): the suite's server runs with it off,
    under which an immediate shutdown loses commits already acknowledged."""
    workdir = Path(tempfile.mkdtemp(prefix="faults-", dir=os.environ["STOREFRONT_TEST_WORKDIR"]))
    server = PostgresServer(workdir / "pg", debian_bin(), port=free_port(), fsync="off")
    suite = dict(connection.settings_dict)
    try:
        server.start()
        run_sql(server.url(), f'CREATE DATABASE "{suite["NAME"]}"')
        connection.close()
        connection.settings_dict.update(HOST="127.0.0.1", PORT=server.port, USER=USER, PASSWORD="")
        with django_db_blocker.unblock():
            call_command("migrate", verbosity=0)
        yield server
    finally:
        connection.close()
        connection.settings_dict.update(suite)
        ContentType.objects.clear_cache()  # its ids were the throwaway database's
        server.stop("immediate")
        shutil.rmtree(workdir)


def run_sql(url: str, *statements: str) -> list:
    """Runs each statement on a connection of its own (autocommit); the last one's rows."""
    rows: list = []
    with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
        for statement in statements:
            cursor = conn.execute(statement)
            rows = cursor.fetchall() if cursor.description else []
    return rows


def terminate_backends(url: str) -> int:
    """pg_terminate_backend on every other session of the database; how many were ended."""
    rows = run_sql(
        url,
        "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE pid <> pg_backend_pid() AND datname = current_database()",
    )
    return rows[0][0]


# --- servers -----------------------------------------------------------------------------------


def load_server(workdir: Path, name: str, *, workers: int, **environment: str) -> Gunicorn:
    """gunicorn for the load: the API rate limit out of its way, warnings and up logged."""
    return Gunicorn(
        workdir / f"{name}.log",
        workers=workers,
        API_RATE_LIMIT_PER_MINUTE="1000000000",
        LOG_LEVEL="WARNING",
        **environment,
    )


def errors_logged(server: Gunicorn) -> Counter:
    """The database errors of the 500s the server logged so far, by type and message start."""
    found: Counter = Counter()
    for line in server.log_lines("Error"):
        match = re.search(r"(\w+Error): ([^\\\"]{0,70})", line)
        if match:
            found[f"{match.group(1)}: {match.group(2)}"] += 1
    return found


# --- load --------------------------------------------------------------------------------------


@dataclasses.dataclass
class Outcome:
    client: int
    operation: str
    started: float
    ended: float
    status: int  # 0: no HTTP answer (connection refused or reset, timeout)
    detail: str = ""

    @property
    def failed(self) -> bool:
        # 409 on a write retried with its own key: the key is stuck "in progress".
        return self.status == 0 or self.status >= 500 or self.status == 409


@dataclasses.dataclass
class Write:
    key: str
    code: str
    final_status: int | None = None
    coupon_id: int | None = None
    attempts: int = 0


class Load:
    """`clients` threads, each with its own keep-alive session, cycling through GET /api/v2/me,
    GET /api/v1/coupons and POST /api/v1/coupons with an Idempotency-Key; a write that gets no
    answer, a 5xx or a 409 is sent again with the same key and body (as a client library
    would), for at most WRITE_RETRY_SECONDS."""

    def __init__(self, base: str, *, secret: str, store_slug: str, clients: int, tag: str):
        self.base = base
        self.headers = {"Authorization": f"Bearer {secret}", "X-STORE": store_slug}
        self.clients = clients
        self.tag = tag
        self.outcomes: list[Outcome] = []
        self.writes: list[Write] = []
        self.crashes: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> "Load":
        self._threads = [
            threading.Thread(target=self._client, args=(number,), daemon=True)
            for number in range(self.clients)
        ]
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=REQUEST_TIMEOUT + WRITE_RETRY_SECONDS + 5)
        assert not any(thread.is_alive() for thread in self._threads), "a client did not stop"
        assert not self.crashes, self.crashes

    def _send(
        self, session, client, operation, method, path, headers=(), **kwargs
    ) -> requests.Response | None:
        started = time.monotonic()
        response = None
        try:
            response = session.request(
                method,
                self.base + path,
                headers={**self.headers, **dict(headers)},
                timeout=REQUEST_TIMEOUT,
                **kwargs,
            )
            status, detail = response.status_code, response.text[:300]
        except requests.RequestException as error:
            status, detail = 0, repr(error)[:300]
        with self._lock:
            self.outcomes.append(
                Outcome(client, operation, started, time.monotonic(), status, detail)
            )
        return response

    def _write(self, session, client: int, number: int) -> None:
        write = Write(key=f"{self.tag}-{client}-{number}", code=f"{self.tag}C{client}N{number}")
        with self._lock:
            self.writes.append(write)
        body = {"code": write.code, "type": "AMOUNT", "discount": 5, "store_wide": True}
        first = time.monotonic()
        while time.monotonic() - first < WRITE_RETRY_SECONDS:
            write.attempts += 1
            response = self._send(
                session,
                client,
                "coupon create",
                "POST",
                "/api/v1/coupons",
                json=body,
                headers={"Idempotency-Key": write.key},
            )
            if response is not None and response.status_code < 500 and response.status_code != 409:
                write.final_status = response.status_code
                if response.status_code == 201:
                    write.coupon_id = response.json()["id"]
                return
            time.sleep(WRITE_RETRY_PAUSE)

    def _client(self, client: int) -> None:
        session = requests.Session()
        number = 0
        try:
            while not self._stop.is_set():
                self._send(session, client, "me", "GET", "/api/v2/me")
                self._send(session, client, "coupon list", "GET", "/api/v1/coupons?limit=15")
                number += 1
                self._write(session, client, number)
                time.sleep(CLIENT_PAUSE)
        except Exception as error:  # a bug of the load itself: the run fails on it
            self.crashes.append(repr(error))
            raise
        finally:
            session.close()


@dataclasses.dataclass
class Figures:
    """What one run under a fault measured."""

    requests: int
    failures: int
    statuses: dict
    failures_by_client: dict
    recovered_after: float  # seconds from the fault's start to the end of the last failure
    failures_after_recovery: int
    failure_samples: list

    def line(self) -> str:
        return (
            f"requests {self.requests}, failed {self.failures} {self.statuses}, "
            f"per client {self.failures_by_client}, recovered after {self.recovered_after:.2f} s, "
            f"failed after recovery {self.failures_after_recovery}"
        )


def figures(outcomes: list[Outcome], *, fault_at: float, recovery_target: float) -> Figures:
    failed = [outcome for outcome in outcomes if outcome.failed]
    by_client: dict[int, int] = defaultdict(int)
    for outcome in failed:
        by_client[outcome.client] += 1
    last_failure = max((outcome.ended for outcome in failed), default=fault_at)
    return Figures(
        requests=len(outcomes),
        failures=len(failed),
        statuses=dict(Counter(outcome.status for outcome in failed)),
        failures_by_client=dict(sorted(by_client.items())),
        recovered_after=max(0.0, last_failure - fault_at),
        failures_after_recovery=sum(
            1 for outcome in failed if outcome.started > fault_at + recovery_target
        ),
        failure_samples=[
            f"{outcome.operation} {outcome.status} at +{outcome.started - fault_at:.2f}s: "
            f"{outcome.detail[:160]}"
            for outcome in failed[:8]
        ],
    )
