"""End to end through a real Celery worker process, the test Redis and the test database:
events recorded and committed here are delivered by the worker to the local receiver."""

import itertools
import os
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from standardwebhooks import Webhook

from tests.concurrency import run_at_once
from tests.servers import ThrowawayRedis, wait_for
from tests.webhooks.helpers import Reply, channel_for, record_order_completed, store_secret
from webhooks.dispatch.attempts import ABANDONED_ATTEMPT_ERROR
from webhooks.models import WebhookDelivery

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

FINAL = ("succeeded", "failed", "disabled")


def all_final(timeout: float):
    def check():
        statuses = list(WebhookDelivery.objects.values_list("status", flat=True))
        return statuses and all(status in FINAL for status in statuses)

    wait_for(check, timeout=timeout, what="every delivery in a final state")


def first_attempt_fails(receiver):
    """500 to the first request of each event, 200 afterwards."""
    seen = set()

    def respond(request):
        event_id = request.headers["webhook-id"]
        with receiver.lock:
            first = event_id not in seen
            seen.add(event_id)
        return Reply(500, b"not yet") if first else Reply(200)

    return respond


def assert_at_least_once_and_no_false_success(receiver, events):
    received = receiver.received()
    assert {e.id for e in events} <= {r.headers["webhook-id"] for r in received}
    answered_2xx = {
        r.headers["webhook-id"]
        for r in received
        if r.answered_status is not None and 200 <= r.answered_status < 300
    }
    for delivery in WebhookDelivery.objects.all():
        if delivery.status == "succeeded":
            assert delivery.event_id in answered_2xx
            assert 200 <= delivery.response_status < 300
            assert delivery.attempt_records.filter(response_status__range=(200, 299)).exists()


def test_worker_delivers_a_signed_event(celery_worker, store, receiver):
    channel = channel_for(store, receiver.url)

    event = record_order_completed(store)

    request = wait_for(lambda: receiver.received(), timeout=20, what="delivery")[0]
    assert (
        Webhook(store_secret(channel.store)).verify(request.body, request.headers)["id"] == event.id
    )
    all_final(timeout=10)
    delivery = WebhookDelivery.objects.get(event=event)
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("succeeded", 1, 200)


def test_worker_retries_then_succeeds(celery_worker, store, receiver):
    channel_for(store, receiver.url)
    receiver.respond = first_attempt_fails(receiver)

    event = record_order_completed(store)

    all_final(timeout=20)
    delivery = WebhookDelivery.objects.get(event=event)
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("succeeded", 2, 200)
    assert [r.answered_status for r in receiver.received()] == [500, 200]


def test_worker_marks_failed_when_retries_are_exhausted(celery_worker, store, receiver):
    channel_for(store, receiver.url)
    receiver.respond = lambda request: Reply(500, b"always")

    event = record_order_completed(store)

    all_final(timeout=20)
    delivery = WebhookDelivery.objects.get(event=event)
    # WORKER_ENV: three retries after the first attempt
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("failed", 4, 500)
    assert len(receiver.received()) == 4


def test_events_from_concurrent_writers_each_arrive_once(celery_worker, store, receiver):
    channel_for(store, receiver.url)
    events, lock, order_ids = [], threading.Lock(), itertools.count(1)

    def writer():
        for _ in range(15):
            event = record_order_completed(store, order_id=next(order_ids))
            with lock:
                events.append(event)

    outcomes = run_at_once(writer, 3)
    assert not [o for o in outcomes if isinstance(o, BaseException)], outcomes

    all_final(timeout=30)
    arrived = [request.headers["webhook-id"] for request in receiver.received()]
    assert sorted(arrived) == sorted(event.id for event in events)  # every one, once each
    assert set(WebhookDelivery.objects.values_list("status", "attempts")) == {("succeeded", 1)}


def test_kill_9_of_the_worker_loses_no_delivery(celery_worker, store, receiver):
    # given deliveries in flight: the receiver holds the first request until the worker is
    # killed (well within WORKER_ENV's 1.5 s timeout), each answer takes a while, and first
    # attempts fail
    channel_for(store, receiver.url)
    slow_then_ok = first_attempt_fails(receiver)
    held = []
    release = threading.Event()

    def respond(request):
        reply = slow_then_ok(request)
        with receiver.lock:
            hold = not held
            if hold:
                held.append(request)
        if hold:
            release.wait(timeout=30)
        reply.delay = 0.2
        return reply

    receiver.respond = respond
    events = [record_order_completed(store, order_id=n) for n in range(1, 16)]
    wait_for(lambda: held, timeout=20, what="a first request in flight")

    # when the whole worker is killed mid-flight (its supervisor starts a new one)
    starts = celery_worker.starts
    celery_worker.kill()
    release.set()
    wait_for(lambda: celery_worker.starts > starts, timeout=20, what="worker restarted")

    # then
    all_final(timeout=60)
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"succeeded"}
    assert_at_least_once_and_no_false_success(receiver, events)
    # the held attempt was in flight when the worker died: the next claimer recorded it
    in_flight = WebhookDelivery.objects.get(event_id=held[0].headers["webhook-id"])
    first_attempt = in_flight.attempt_records.get(number=1)
    assert first_attempt.error == ABANDONED_ATTEMPT_ERROR, first_attempt.error
    for delivery in WebhookDelivery.objects.all():
        assert delivery.attempt_records.count() == delivery.attempts


@pytest.mark.alone  # stops the suite's own Redis, which every other test uses
def test_redis_outage_during_recording_delays_but_loses_nothing(celery_worker, store, receiver):
    channel_for(store, receiver.url)
    receiver.respond = first_attempt_fails(receiver)
    # the suite's Redis, restarted with bin/with-test-services' pid file and directory
    suite_redis = ThrowawayRedis(
        Path(os.environ["STOREFRONT_TEST_WORKDIR"]), port=urlsplit(settings.REDIS_URL).port
    )
    before = [record_order_completed(store, order_id=n) for n in range(1, 4)]

    try:
        # when Redis stops while events are recorded (their queue messages cannot be sent)
        suite_redis.stop()
        during = [record_order_completed(store, order_id=n) for n in range(4, 10)]
        time.sleep(1.5)
    finally:
        # and starts again (empty: queued messages are gone), whatever happened meanwhile
        if not suite_redis.ping():
            suite_redis.start()

    # then the sweeper queues the deliveries again and all of them succeed
    all_final(timeout=60)
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"succeeded"}
    assert WebhookDelivery.objects.count() == len(before) + len(during)
    assert_at_least_once_and_no_false_success(receiver, before + during)
