"""PostgreSQL faults under load: gunicorn under the production settings on
a PostgreSQL of this module's own, client threads mixing reads and idempotent writes, and
mid-run a fast restart, an immediate restart, pg_terminate_backend on every session, or a
migration that changes the result type of a prepared statement. Each run counts the failed
requests (5xx, no answer, or a write's key stuck at 409) and the time until the last one, and
checks every write: one coupon per Idempotency-Key, the one its client was answered with.

Targets: recovered within RECOVERY_TARGET s of the fault, at most one failed request per
web process (each holds one database connection; gunicorn's sync workers close each client
connection after its answer, so a failed request had a client connection of its own) and that
one a write in flight (reads are answered on a new connection: core/database/connections.py), none
after
recovery, no lost or doubled write. Through PgBouncer in transaction mode (docs/scaling.md's
settings): no failed request at all, and the webhook send slots still exact (a worker's
processes through the same PgBouncer push each created coupon's event once, never more at once
than the channel's slots, and leave no slot taken).

Figures of each run: docs/benchmarks/faults-postgresql.md.
"""

import os
import time
from collections import Counter

import pytest
from django.conf import settings
from django.db import connection
from rest_framework.test import APIClient

from accounts.models import ApiKey
from core.api.models import IdempotencyKey
from coupons.models import Coupon
from events.models import Event
from tests.factories import MembershipFactory, make_api_key
from tests.faults.harness import (
    Load,
    errors_logged,
    figures,
    load_server,
    run_sql,
    terminate_backends,
)
from tests.servers import PgBouncer, wait_for
from tests.webhooks.helpers import (
    WORKER_ENV,
    CountingReceiver,
    channel_for,
    live_slots,
)
from webhooks.models import WebhookDelivery

# Every test of the module on a PostgreSQL of its own (tests/faults/conftest.py).
pytestmark = [pytest.mark.faults, pytest.mark.usefixtures("postgresql")]

RECOVERY_TARGET = 5.0
CLIENTS = 4
WORKERS = 2
LOAD_BEFORE_FAULT = 2.0
LOAD_AFTER_FAULT = 7.0


@pytest.fixture(scope="module")
def test_database_url(postgresql):
    return postgresql.url(connection.settings_dict["NAME"])


@pytest.fixture(scope="module")
def server(tmp_path_factory, test_database_url):
    """gunicorn as docs/production.md runs it: persistent connections (CONN_MAX_AGE 60) and
    the per-session prepared statements that come with them."""
    with load_server(
        tmp_path_factory.mktemp("faults"),
        "gunicorn",
        workers=WORKERS,
        DATABASE_URL=test_database_url,
    ) as gunicorn:
        yield gunicorn


@pytest.fixture
def owner(transactional_db):
    membership = MembershipFactory()
    return {"secret": make_api_key(membership.user), "store": membership.store}


def store_access_as(url: str, column_type: str) -> None:
    """A migration's ALTER COLUMN ... TYPE on a column the API key lookup returns: the
    statement each web process prepared no longer fits ("cached plan must not change result
    type")."""
    run_sql(url, f"ALTER TABLE accounts_apikey ALTER COLUMN store_access TYPE {column_type}")


STORE_ACCESS_TYPE = f"varchar({ApiKey._meta.get_field('store_access').max_length})"


def run_load(base: str, owner: dict, tag: str, fault=None):
    """The load, with `fault()` called LOAD_BEFORE_FAULT s in; its outcomes and writes."""
    with Load(
        base,
        secret=owner["secret"],
        store_slug=owner["store"].slug,
        clients=CLIENTS,
        tag=tag,
    ) as load:
        time.sleep(LOAD_BEFORE_FAULT)
        fault_at = time.monotonic()
        if fault is not None:
            fault()
        time.sleep(LOAD_AFTER_FAULT)
    # The test's own session may have been ended by the fault: a new one for the checks below.
    connection.close()
    return load, fault_at


def assert_each_write_exactly_once(load: Load, store) -> None:
    rows = dict(Coupon.objects.filter(store=store).values_list("code", "id"))
    assert load.writes
    for write in load.writes:
        assert write.final_status == 201, write  # answered (first time or replayed), not lost
        assert rows.get(write.code) == write.coupon_id, write  # its row, and only one
    written = {write.code for write in load.writes}
    assert len(written) == len(load.writes)
    # No row for a key that was not sent (a retry that ran again under a new code).
    assert set(rows) == written


def report(name: str, found, errors: Counter) -> None:
    """The run's figures on stdout (`pytest -s`, or in the report of a failure)."""
    print(f"\n{name}: {found.line()}")
    for sample in found.failure_samples:
        print("   response:", sample)
    for error, count in errors.items():
        print(f"   logged {count}x: {error}")


@pytest.mark.parametrize(
    "fault_name",
    ["restart-fast", "restart-immediate", "terminate-backends", "result-type-change"],
)
def test_the_api_recovers_from_a_database_fault_under_load(
    fault_name, server, owner, test_database_url, postgresql
):
    def result_type_change():
        store_access_as(test_database_url, "text")
        time.sleep(2)
        store_access_as(test_database_url, STORE_ACCESS_TYPE)  # and back: changed again

    fault = {
        "restart-fast": lambda: postgresql.restart("fast"),
        "restart-immediate": lambda: postgresql.restart("immediate"),
        "terminate-backends": lambda: terminate_backends(test_database_url),
        "result-type-change": result_type_change,
    }[fault_name]
    errors_before = errors_logged(server)
    try:
        load, fault_at = run_load(server.base, owner, fault_name.replace("-", ""), fault)
    finally:
        if fault_name == "result-type-change":
            connection.close()
            store_access_as(test_database_url, STORE_ACCESS_TYPE)

    found = figures(load.outcomes, fault_at=fault_at, recovery_target=RECOVERY_TARGET)
    report(fault_name, found, errors_logged(server) - errors_before)
    assert found.requests > 100  # the load ran
    assert found.recovered_after <= RECOVERY_TARGET, found
    assert found.failures_after_recovery == 0, found
    # At most one per database connection: each web process's request that was using it. A
    # client's next request may reach the other web process (sync workers close each client
    # connection after its answer), so one client can see one failure from each.
    assert found.failures <= WORKERS, found
    # A read is answered on a new connection (core/database/connections.py): an idle connection the
    # server
    # ended is dropped before the request, one ended during a query is read again. What may
    # fail is a write whose query the server ended (its client retries it with its key).
    failed_reads = [o for o in load.outcomes if o.failed and o.operation != "coupon create"]
    assert not failed_reads, failed_reads[:4]
    assert_each_write_exactly_once(load, owner["store"])


@pytest.fixture
def holding_receiver():
    """Holds each delivery 20 ms, counting those in flight: a send slot taken twice would show
    as more in flight than the channel allows."""
    server = CountingReceiver(hold=0.02)
    yield server
    server.close()


def unsent_report(unsent, worker) -> str:
    """The deliveries left unsent, and what the worker logged beyond routine."""
    columns = ("id", "status", "attempts", "next_attempt_at", "enqueued_at", "lease_until")
    rows = [dict(zip(columns, row, strict=True)) for row in unsent.values_list(*columns)]
    logged = [
        line
        for line in worker.log_path.read_text(errors="replace").splitlines()
        if any(word in line for word in ("WARNING", "ERROR", "Traceback", "Error", "exceeded"))
    ]
    return "\n".join(
        [f"{len(rows)} unsent deliveries:", *map(str, rows[:20]), "worker log:", *logged[-40:]]
    )


def test_the_same_load_through_pgbouncer_in_transaction_mode_has_no_failures(
    tmp_path,
    owner,
    postgresql,
    start_worker,
    holding_receiver,
):
    # every coupon the load creates is pushed to the store's webhook receiver
    channel_for(owner["store"], holding_receiver.url, event_types=["coupon.created"])
    with PgBouncer(postgresql.port) as bouncer:
        through_bouncer = bouncer.database_url(connection.settings_dict["NAME"])
        # docs/scaling.md: a connection per request behind PgBouncer in transaction mode, which
        # also sends the per-request reads unprepared (DATABASE_PREPARED_STATEMENTS follows);
        # the webhook worker's processes go through the same PgBouncer. As in production, the
        # worker runs beat (the sweeper queues what a drain killed at its time limit leaves),
        # and the web processes share the worker's webhook timings (a drain marker they set
        # lives WEBHOOKS_LEASE_SECONDS, the drain's time limit, not production's 60 s).
        worker = start_worker(
            {
                "DATABASE_URL": through_bouncer,
                "DATABASE_CONN_MAX_AGE": "0",
                # the web processes' cache: production settings keep it on REDIS_URL
                "STOREFRONT_TEST_CACHE_URL": os.environ["REDIS_URL"],
            },
            concurrency=4,
        )
        with load_server(
            tmp_path,
            "gunicorn-pgbouncer",
            workers=WORKERS,
            DATABASE_URL=through_bouncer,
            DATABASE_CONN_MAX_AGE="0",
            **WORKER_ENV,
        ) as gunicorn:
            load, fault_at = run_load(gunicorn.base, owner, "pgbouncer")
            errors = gunicorn.log_lines("ERROR", "Traceback")
        unsent = WebhookDelivery.objects.filter(channel__store=owner["store"]).exclude(
            status=WebhookDelivery.STATUS_SUCCEEDED
        )
        try:
            wait_for(lambda: not unsent.exists(), timeout=90, what="every delivery sent")
        except AssertionError as timed_out:
            raise AssertionError(f"{timed_out}\n{unsent_report(unsent, worker)}") from None

    found = figures(load.outcomes, fault_at=fault_at, recovery_target=RECOVERY_TARGET)
    report("pgbouncer", found, errors_logged(gunicorn))
    assert found.requests > 100
    assert found.failures == 0, found
    assert not errors, errors[:5]
    assert_each_write_exactly_once(load, owner["store"])
    # send slots still exact: each coupon's event pushed once, never more than the
    # channel's slots at once, and no slot left taken
    events = set(
        Event.objects.filter(store=owner["store"], type="coupon.created").values_list(
            "id", flat=True
        )
    )
    received = Counter(r.headers["webhook-id"] for r in holding_receiver.received())
    assert len(events) == len(load.writes)
    assert set(received) == events
    assert max(received.values()) == 1
    assert 1 <= holding_receiver.most_in_flight <= settings.WEBHOOKS_CHANNEL_CONCURRENCY
    # released just after each outcome is recorded; a slot left taken would hold its 3 s lease
    wait_for(lambda: live_slots() == 0, timeout=1, what="every send slot released")
    print(
        f"   webhooks through PgBouncer: {len(received)} events pushed once each, "
        f"at most {holding_receiver.most_in_flight} in flight"
    )


# --- a session lost in the middle of an idempotent write ---------------------------------------


@pytest.fixture
def session_ended_once(transactional_db):
    """`arm(table, when)`: the next write of that kind on `table` ends its own database session
    (pg_terminate_backend, as an operator or a failover would), once: the sequence that counts
    the firings is not rolled back with the aborted transaction."""
    armed = []

    def arm(table: str, when: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute("CREATE SEQUENCE faults_session_end")
            cursor.execute(
                "CREATE FUNCTION faults_session_end() RETURNS trigger LANGUAGE plpgsql AS $$ "
                "BEGIN IF nextval('faults_session_end') = 1 THEN "
                "PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5); END IF; "
                "RETURN NEW; END $$"
            )
            cursor.execute(
                f"CREATE TRIGGER faults_session_end BEFORE {when} ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION faults_session_end()"
            )
        armed.append(table)

    yield arm
    connection.close()
    with connection.cursor() as cursor:
        for table in armed:
            cursor.execute(f"DROP TRIGGER faults_session_end ON {table}")
            cursor.execute("DROP FUNCTION faults_session_end()")
            cursor.execute("DROP SEQUENCE faults_session_end")


COUPON = {"code": "ONCE", "type": "AMOUNT", "discount": 5, "store_wide": True}


@pytest.fixture
def owner_client(owner):
    """The owner's API client; a 500 is answered to it, as to any client, not raised."""
    client = APIClient(raise_request_exception=False)
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {owner['secret']}", HTTP_X_STORE=owner["store"].slug
    )
    return client


def test_a_write_whose_session_ended_mid_run_can_be_retried_with_its_key(
    session_ended_once, owner_client, owner
):
    session_ended_once(Coupon._meta.db_table, "INSERT")

    failed = owner_client.post("/api/v1/coupons", COUPON, HTTP_IDEMPOTENCY_KEY="once")
    retried = owner_client.post("/api/v1/coupons", COUPON, HTTP_IDEMPOTENCY_KEY="once")

    assert failed.status_code == 500, failed.content
    # the key was released on a new session: the retry runs the write (not 409 for 5 minutes)
    assert retried.status_code == 201, retried.content
    assert list(Coupon.objects.filter(store=owner["store"]).values_list("id", flat=True)) == [
        retried.json()["id"]
    ]


def test_a_write_whose_session_ended_as_its_outcome_was_recorded_is_answered(
    session_ended_once, owner_client, owner
):
    session_ended_once(IdempotencyKey._meta.db_table, "UPDATE")

    created = owner_client.post("/api/v1/coupons", COUPON, HTTP_IDEMPOTENCY_KEY="once")
    replayed = owner_client.post("/api/v1/coupons", COUPON, HTTP_IDEMPOTENCY_KEY="once")

    # the coupon was committed before the session ended: its outcome is recorded on a new one
    assert created.status_code == 201, created.content
    assert replayed.status_code == 201, replayed.content
    assert replayed.headers["Idempotent-Replayed"] == "true"
    assert replayed.json()["id"] == created.json()["id"]
    assert Coupon.objects.filter(store=owner["store"]).count() == 1
