"""A persistent connection the server ended: the request or task that meets
it is served on a new connection, without a round trip added to every request
(core/database/connections.py).

On a PostgreSQL of this module's own (tests/faults/conftest.py `postgresql`): its sessions are
ended with pg_terminate_backend and the server itself restarted (fast) under a real worker.
The load run of tests/faults/test_postgresql.py checks the same under gunicorn.
"""

import threading

import psycopg
import pytest
from django.db import OperationalError, connection, transaction
from rest_framework.test import APIClient

from config.celery import app
from core.database.connections import close_connections_the_server_ended
from coupons.models import Coupon
from events.models import Event
from tests.factories import CouponFactory, MembershipFactory, make_api_key, old_events
from tests.faults.harness import run_sql
from tests.servers import wait_for
from tests.settings_helpers import production_environment

pytestmark = [pytest.mark.faults, pytest.mark.usefixtures("postgresql")]


@pytest.fixture
def owner(transactional_db):
    membership = MembershipFactory()
    client = APIClient(raise_request_exception=False)  # a 500 is answered, as to any client
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {make_api_key(membership.user)}",
        HTTP_X_STORE=membership.store.slug,
    )
    yield client, membership.store
    connection.close()  # a session a failed test left ended must not fail the flush after it


@pytest.fixture
def database_url(postgresql):
    return postgresql.url(connection.settings_dict["NAME"])


def backend_pid() -> int:
    """The server process of this thread's open connection (pg_backend_pid() would be a query
    on it; the driver knows it from the connection's start)."""
    return connection.connection.info.backend_pid


def session_of(url: str, pid: int):
    """(state, state_change) of the server session `pid`, read on a connection of its own;
    None once it has ended."""
    rows = run_sql(url, f"SELECT state, state_change FROM pg_stat_activity WHERE pid = {pid}")
    return rows[0] if rows else None


def waiting_on_a_lock(url: str, pid: int) -> bool:
    return bool(
        run_sql(
            url,
            f"SELECT 1 FROM pg_stat_activity WHERE pid = {pid} AND wait_event_type = 'Lock'",
        )
    )


def end_session(url: str, pid: int) -> None:
    run_sql(url, f"SELECT pg_terminate_backend({pid})")
    wait_for(lambda: session_of(url, pid) is None, timeout=10, what=f"session {pid} ended")


# SQLSTATE of a statement that gave up waiting for a lock (lock_timeout).
LOCK_NOT_AVAILABLE = "55P03"

COUPON = {"code": "AFTER", "type": "AMOUNT", "discount": 5, "store_wide": True}


def test_a_write_on_a_connection_the_server_ended_while_idle_is_served(owner, database_url):
    client, store = owner
    # given: the request's connection is open, idle, and then ended by the server
    assert client.get("/api/v2/me").status_code == 200
    ended = backend_pid()
    end_session(database_url, ended)

    # when: the next request, a write
    response = client.post("/api/v1/coupons", COUPON, HTTP_IDEMPOTENCY_KEY="after-end")

    # then: served on a new connection (a 500 "terminating connection" before)
    assert response.status_code == 201, response.content
    assert backend_pid() != ended
    assert list(Coupon.objects.filter(store=store).values_list("code", flat=True)) == ["AFTER"]


def test_a_read_whose_connection_the_server_ends_during_a_query_is_answered(owner, database_url):
    client, store = owner
    CouponFactory(store=store, code="LISTED")
    first = client.get("/api/v2/me")
    assert first.status_code == 200
    reading = backend_pid()
    # given: the coupon list's query waits on a lock held by another session, and the server
    # ends the request's session while it waits
    locker = psycopg.connect(database_url)
    locker.execute(f"LOCK TABLE {Coupon._meta.db_table} IN ACCESS EXCLUSIVE MODE")

    def end_it_while_it_waits():
        wait_for(
            lambda: waiting_on_a_lock(database_url, reading),
            timeout=10,
            what="the list's query waiting on the lock",
        )
        run_sql(database_url, f"SELECT pg_terminate_backend({reading})")
        locker.rollback()

    ender = threading.Thread(target=end_it_while_it_waits)
    ender.start()
    try:
        # when
        response = client.get("/api/v1/coupons")
    finally:
        ender.join(timeout=30)
        locker.close()

    # then: answered on a new connection (a 500 before), once
    assert response.status_code == 200, response.content
    assert [coupon["code"] for coupon in response.json()["data"]] == ["LISTED"]
    assert backend_pid() != reading
    # and counted once against the key's rate limit, although its view ran twice
    remaining = int(first.headers["X-RateLimit-Remaining"])
    assert int(response.headers["X-RateLimit-Remaining"]) == remaining - 1


def test_a_write_whose_connection_the_server_ends_during_a_query_is_not_run_again(
    owner, database_url
):
    client, store = owner
    assert client.get("/api/v2/me").status_code == 200
    writing = backend_pid()
    locker = psycopg.connect(database_url)
    locker.execute(f"LOCK TABLE {Coupon._meta.db_table} IN ACCESS EXCLUSIVE MODE")

    def end_it_while_it_waits():
        wait_for(
            lambda: waiting_on_a_lock(database_url, writing),
            timeout=10,
            what="the write waiting on the lock",
        )
        run_sql(database_url, f"SELECT pg_terminate_backend({writing})")
        locker.rollback()

    ender = threading.Thread(target=end_it_while_it_waits)
    ender.start()
    try:
        response = client.post("/api/v1/coupons", COUPON, HTTP_IDEMPOTENCY_KEY="in-flight")
    finally:
        ender.join(timeout=30)
        locker.close()

    # its effects are unknown to the server's client: the 500 stands, the client retries with
    # its key (tests/faults/test_postgresql.py), and nothing was written twice
    assert response.status_code == 500, response.content
    assert not Coupon.objects.filter(store=store).exists()


def test_the_check_before_each_request_sends_nothing_to_a_healthy_connection(owner, database_url):
    client, _ = owner
    assert client.get("/api/v2/me").status_code == 200
    pid = backend_pid()
    before = session_of(database_url, pid)

    for _ in range(1000):
        close_connections_the_server_ended()

    # the server saw no statement (its session's last state change is the same) and the
    # connection is kept
    assert session_of(database_url, pid) == before
    assert before[0] == "idle"
    assert backend_pid() == pid


# --- a task on a worker whose connection the server ended --------------------------------------


@pytest.mark.worker
def test_tasks_after_a_fast_restart_and_during_a_session_end_run_not_failed(
    transactional_db, postgresql, database_url, start_worker
):
    # a worker under the production settings: persistent connections (CONN_MAX_AGE 60)
    production = production_environment(DATABASE_CONN_MAX_AGE="60")
    worker = start_worker(
        {
            name: production[name]
            for name in (
                "DJANGO_SETTINGS_MODULE",
                "SECRET_KEY",
                "ALLOWED_HOSTS",
                "BASE_URL",
                "STOREFRONT_DOMAIN",
                "DATABASE_CONN_MAX_AGE",
            )
        },
        concurrency=1,
        beat=False,
    )
    store = MembershipFactory().store

    def log() -> str:
        return worker.log_path.read_text(errors="replace")

    def event_left() -> bool:
        """Whether the store's old event is still there. The read gives way to the prune: it
        and the task's partition upkeep lock the journal's tables in opposite orders, and a
        read waiting on the task's lock made a deadlock, which PostgreSQL broke by ending
        either of them (the task's failure would fail this test). Given up after 100 ms, well
        before the deadlock check (deadlock_timeout, 1 s), the read is simply tried again."""
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL lock_timeout = '100ms'")
                return Event.objects.filter(store=store).exists()
        except OperationalError as error:
            if getattr(error.__cause__, "sqlstate", None) == LOCK_NOT_AVAILABLE:
                return True
            raise

    def pruned(round_name: str) -> None:
        wait_for(
            lambda: not event_left(),
            timeout=45,
            interval=0.2,
            what=f"the prune of {round_name} deleting the old event",
            process=worker.process,
            log=lambda: log()[-3000:],
        )

    def prune(round_name: str) -> None:
        old_events(store, 1)
        app.send_task("events.partitions", queue="maintenance")
        pruned(round_name)

    # given: the worker's process has a connection open, kept between tasks
    prune("the first task")

    # when the server restarts (fast: every session ended) before the next task comes, that
    # task runs on a new connection: not failed, not even retried (core/database/connections.py)
    postgresql.restart("fast")
    connection.close()  # the test's own session ended too
    prune("the task after the restart")
    assert "raised unexpected" not in log() and "retry: Retry in" not in log(), log()[-3000:]

    # when the server ends the task's session while its query runs (it waits on a lock the
    # test holds), the task is retried on a new connection
    old_events(store, 1)
    locker = psycopg.connect(database_url)
    try:
        locker.execute(f"LOCK TABLE {Event._meta.db_table} IN ACCESS EXCLUSIVE MODE")
        app.send_task("events.partitions", queue="maintenance")
        (pid,) = wait_for(
            lambda: run_sql(
                database_url,
                "SELECT pid FROM pg_stat_activity "
                "WHERE wait_event_type = 'Lock' AND datname = current_database()",
            ),
            timeout=30,
            what="the prune waiting on the lock",
        )[0]
        run_sql(database_url, f"SELECT pg_terminate_backend({pid})")
    finally:
        locker.close()
    pruned("a task whose session ended")
    assert "raised unexpected" not in log(), log()[-3000:]
    assert log().count("retry: Retry in") == 1
    assert log().count("events partitions: ") == 3
