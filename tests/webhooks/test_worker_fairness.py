"""A store whose receiver hangs cannot starve the others, through a real 4-process Celery
worker (with its beat sweeper), the test Redis and the test PostgreSQL.

Store A's receiver hangs past the send timeout on every request and A has 300 due deliveries
(their messages look lost, so the sweeper keeps queueing them); store B records one event.
B's receiver gets it within 10 s, and A never has more than WEBHOOKS_CHANNEL_CONCURRENCY
sends in flight. `-s` prints the figure recorded in docs/benchmarks/webhooks.md.
"""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.factories import StoreFactory
from tests.servers import wait_for
from tests.webhooks.helpers import (
    FAIRNESS_ENV,
    SEND_TIMEOUT,
    CeleryWorker,
    HangingReceiver,
    channel_for,
    record_order_completed,
)
from webhooks.models import WebhookDelivery

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

PROCESSES = 4


# Function-scoped: torn down before the test's database flush, which would otherwise deadlock
# with the worker's sends to the hanging store still in flight.
@pytest.fixture
def four_process_worker(django_db_setup, django_db_blocker, tmp_path_factory):
    from config.celery import app

    app.control.purge()
    worker = CeleryWorker(
        tmp_path_factory.mktemp("celery-fair"), concurrency=PROCESSES, extra_env=FAIRNESS_ENV
    )
    with django_db_blocker.unblock():
        worker.start()
    yield worker
    worker.stop()
    app.control.purge()


@pytest.fixture
def hanging_receiver():
    server = HangingReceiver()
    yield server
    server.close()


def test_a_hanging_store_does_not_delay_another_stores_first_attempt(
    four_process_worker, receiver, hanging_receiver
):
    # given store A: a receiver that hangs, and 300 due deliveries whose messages look lost
    store_a, store_b = StoreFactory(), StoreFactory()
    channel_for(store_a, hanging_receiver.url)
    channel_for(store_b, receiver.url)
    for order_id in range(300):
        record_order_completed(store_a, order_id=order_id)
    WebhookDelivery.objects.update(enqueued_at=timezone.now() - timedelta(hours=1))
    wait_for(lambda: hanging_receiver.received(), timeout=20, what="A's sends in flight")
    time.sleep(2 * SEND_TIMEOUT)  # sweeps, retries and A's drains have piled up meanwhile

    # when store B records one event
    started = time.time()
    event = record_order_completed(store_b)

    # then B's receiver gets it within 10 s
    request = wait_for(lambda: receiver.received(), timeout=10, what="B's delivery")[0]
    latency = request.received_at - started
    assert request.headers["webhook-id"] == event.id
    # and A never held more than its two send slots of the four processes
    most_at_once = hanging_receiver.most_sends_at_once()
    assert most_at_once == 2
    print(
        f"\nB's first attempt arrived {latency:.2f} s after its event; A: at most "
        f"{most_at_once} sends in flight of {PROCESSES} processes, "
        f"{len(hanging_receiver.received())} requests received"
    )
