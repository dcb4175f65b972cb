"""Send slots with real Celery workers: one account's many hanging stores, PgBouncer in
transaction mode, and a worker that dies (or whose host stops answering) mid-send.

Workers are `celery -A config worker` subprocesses on the test PostgreSQL and Redis (through a
real PgBouncer, started here, where said); receivers are real local HTTP servers.
"""

import os
import re
import signal
import threading
import time
from datetime import timedelta

import pytest
import yaml
from django.db import connection
from django.utils import timezone

from config.celery import app
from tests.factories import StoreFactory, UserFactory
from tests.servers import PgBouncer, wait_for
from tests.webhooks.helpers import (
    BASE_DIR,
    FAIRNESS_ENV,
    SEND_TIMEOUT,
    CountingReceiver,
    HangingReceiver,
    Reply,
    channel_for,
    live_slots,
    record_order_completed,
)
from webhooks.dispatch.attempts import delivery_send
from webhooks.dispatch.queueing import deliveries_enqueue
from webhooks.models import WebhookDelivery

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def compose_worker_concurrency() -> int:
    """The webhooks worker's process count in compose.yaml (its WORKER_CONCURRENCY default)."""
    compose = yaml.safe_load((BASE_DIR / "compose.yaml").read_text())
    command = " ".join(compose["services"]["worker"]["command"])
    return int(re.search(r"--concurrency=\$\{WORKER_CONCURRENCY:-(\d+)\}", command).group(1))


# --- one account's five hanging stores ---------------------------------------------------


@pytest.fixture
def five_hanging_receivers():
    servers = [HangingReceiver() for _ in range(5)]
    yield servers
    for server in servers:
        server.close()


def test_one_accounts_five_hanging_stores_do_not_delay_another_accounts_delivery(
    start_worker, receiver, five_hanging_receivers
):
    # given the compose worker (its process count), with the default per-account and failing
    # shares, and user A's five stores (created a minute apart, as the store limit allows),
    # each with a receiver that hangs past the send timeout and 60 due deliveries whose
    # messages look lost (the sweeper keeps queueing them)
    processes = compose_worker_concurrency()
    assert processes > 3  # the default account bound (3) leaves B a process
    start_worker(FAIRNESS_ENV, concurrency=processes)
    user_a, user_b = UserFactory(), UserFactory()
    for minute, hanging in enumerate(five_hanging_receivers):
        store = StoreFactory(
            created_by=user_a, created_at=timezone.now() - timedelta(minutes=5 - minute)
        )
        channel_for(store, hanging.url)
        for order_id in range(60):
            record_order_completed(store, order_id=order_id)
    WebhookDelivery.objects.update(enqueued_at=timezone.now() - timedelta(hours=1))
    wait_for(
        lambda: sum(len(h.received()) for h in five_hanging_receivers) >= 3,
        timeout=20,
        what="A's sends in flight",
    )
    time.sleep(2 * SEND_TIMEOUT)  # sweeps, retries and A's drains have piled up meanwhile

    # when user B's store records one event
    store_b = StoreFactory(created_by=user_b)
    channel_for(store_b, receiver.url)
    started = time.time()
    event = record_order_completed(store_b)

    # then B's receiver gets it within 10 s
    request = wait_for(lambda: receiver.received(), timeout=10, what="B's delivery")[0]
    assert request.headers["webhook-id"] == event.id
    latency = request.received_at - started
    # and A's stores together never had more sends in flight than its account's three slots
    # (each send lasts the whole timeout: sends started within less than one overlapped)
    starts = sorted(r.received_at for h in five_hanging_receivers for r in h.received())
    window = SEND_TIMEOUT * 0.8
    most_at_once = max(sum(1 for o in starts if s <= o < s + window) for s in starts)
    assert most_at_once <= 3
    print(
        f"\nB's delivery arrived {latency:.2f} s after its event; A's five stores: at most "
        f"{most_at_once} sends in flight of {processes} processes, {len(starts)} requests"
    )


# --- PgBouncer in transaction mode -------------------------------------------------------


@pytest.fixture
def pgbouncer():
    # ONE server connection: every client shares that one server session
    server_port = int(connection.settings_dict["PORT"])
    with PgBouncer(server_port, pool_size=1) as bouncer:
        yield bouncer


@pytest.fixture
def counting_receiver():
    server = CountingReceiver(hold=0.8)
    yield server
    server.close()


def test_send_slots_bound_sends_through_pgbouncer_in_transaction_mode(
    start_worker, pgbouncer, counting_receiver
):
    # given a 4-process worker whose database connections go through PgBouncer in transaction
    # mode (docs/scaling.md: no prepared statements, no persistent connections)
    start_worker(
        {
            "DATABASE_URL": pgbouncer.database_url(connection.settings_dict["NAME"]),
            "DATABASE_CONN_MAX_AGE": "0",
            "DATABASE_PREPARED_STATEMENTS": "false",
            "WEBHOOKS_CHANNEL_CONCURRENCY": "2",
        },
        concurrency=4,
        beat=False,
    )
    store = StoreFactory(created_by=UserFactory())
    channel_for(store, counting_receiver.url)
    deliveries = [
        WebhookDelivery.objects.get(event=record_order_completed(store, order_id=n))
        for n in range(8)
    ]

    # when all eight are queued as sends at once (besides their drain)
    deliveries_enqueue([d.pk for d in deliveries])

    # then all are sent, never more than the channel's two at once, and no slot is left
    # taken (a session lock would be taken again by every client of the shared session, and
    # its unlock could land on another session)
    wait_for(
        lambda: WebhookDelivery.objects.filter(status="succeeded").count() == 8,
        timeout=60,
        what="the eight deliveries",
    )
    assert counting_receiver.most_in_flight == 2
    assert len(counting_receiver.received()) == 8
    # a send records its outcome, then releases its slots: the last release may trail the
    # last success by a moment
    wait_for(lambda: live_slots() == 0, timeout=5, what="every send slot released")
    assert "pool_mode = transaction" in (pgbouncer.dir / "pgbouncer.ini").read_text()


# --- a worker that dies mid-send ---------------------------------------------------------


@pytest.mark.parametrize(
    "stop_signal",
    [
        pytest.param(signal.SIGKILL, id="killed"),
        # The process, frozen, still holds its database connections open, as a host that
        # vanished does until TCP gives up on it.
        pytest.param(signal.SIGSTOP, id="host-gone"),
    ],
)
def test_a_dead_workers_send_slots_come_back_after_their_lease(
    start_worker, receiver, settings, stop_signal
):
    # given one send slot per channel, leased for 5.5 s (the shortest webhooks.E001 lets
    # WORKER_ENV have), held by a worker sending to a receiver that holds the request
    settings.WEBHOOKS_CHANNEL_CONCURRENCY = 1
    lease = 5.5
    worker = start_worker(
        {"WEBHOOKS_CHANNEL_CONCURRENCY": "1", "WEBHOOKS_LEASE_SECONDS": str(lease)},
        concurrency=2,
        beat=False,
    )
    release = threading.Event()

    def hold_the_first(request):
        if len(receiver.received()) == 1:
            release.wait(timeout=30)
        return Reply(200)

    receiver.respond = hold_the_first
    store = StoreFactory(created_by=UserFactory())
    channel_for(store, receiver.url)
    record_order_completed(store, order_id=1)
    wait_for(lambda: receiver.received(), timeout=20, what="the worker's send in flight")

    # when the worker dies mid-send
    os.killpg(worker.process.pid, stop_signal)
    stopped_at = time.monotonic()
    try:
        waiting = WebhookDelivery.objects.get(event=record_order_completed(store, order_id=2))
        app.control.purge()

        # then its slot stays taken while its lease runs...
        assert delivery_send(delivery_id=waiting.pk) is None
        # ...and comes back when it runs out
        wait_for(
            lambda: delivery_send(delivery_id=waiting.pk) == "succeeded",
            timeout=lease + 10,
            interval=0.2,
            what="the send, once the dead worker's slot lease ran out",
        )
        assert time.monotonic() - stopped_at < lease + 10
    finally:
        release.set()
        if stop_signal != signal.SIGKILL:
            worker.kill()
