"""New deliveries go out through one drain per channel: one queued message for a burst of
events, deliveries claimed one by one (oldest first), never twice, and none left behind.

Drains run in the test process here (tests/webhooks/test_worker_delivery.py runs them in a real
worker); the queue is the real Redis broker, read without consuming it.
"""

import threading

import pytest
from django.test import override_settings

from config.celery import app
from tests.concurrency import run_at_once
from tests.outages import dead_redis_caches
from tests.webhooks.helpers import channel_for, queued, record_order_completed
from webhooks.dispatch import attempts
from webhooks.dispatch.attempts import channel_drain
from webhooks.models import WebhookChannel, WebhookDelivery

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("empty_queue")]


def delivered_ids(receiver) -> list[str]:
    return [request.headers["webhook-id"] for request in receiver.received()]


def test_a_burst_of_new_deliveries_queues_one_drain_of_the_channel(store, receiver):
    channel = channel_for(store, receiver.url)

    for order_id in range(5):
        record_order_completed(store, order_id=order_id)

    assert queued() == [("webhooks.channel_drain", [channel.pk])]
    assert WebhookDelivery.objects.filter(status="pending").count() == 5


def test_a_drain_sends_every_due_delivery_oldest_first_then_new_ones_queue_again(store, receiver):
    channel = channel_for(store, receiver.url)
    events = [record_order_completed(store, order_id=n) for n in range(3)]

    assert channel_drain(channel_id=channel.pk) == 3

    assert delivered_ids(receiver) == [event.id for event in events]
    assert set(WebhookDelivery.objects.values_list("status", "attempts")) == {("succeeded", 1)}
    # the drain is over: the next delivery queues a drain of its own
    app.control.purge()
    record_order_completed(store, order_id=9)
    assert queued() == [("webhooks.channel_drain", [channel.pk])]


def test_a_delivery_committed_as_the_drain_ends_is_sent_by_that_drain(store, receiver, monkeypatch):
    channel = channel_for(store, receiver.url)
    first = record_order_completed(store, order_id=1)
    marker_clear = attempts.channel_drain_marker_clear
    late = []

    def commit_late_event_then_clear(channel_id, leases):
        # Another request commits after the drain found nothing more, while its marker is
        # still set: that request queues nothing and relies on this drain.
        thread = threading.Thread(
            target=lambda: late.append(record_order_completed(store, order_id=2))
        )
        thread.start()
        thread.join()
        marker_clear(channel_id, leases)

    monkeypatch.setattr(attempts, "channel_drain_marker_clear", commit_late_event_then_clear)

    assert channel_drain(channel_id=channel.pk) == 2

    assert delivered_ids(receiver) == [first.id, late[0].id]
    assert queued() == [("webhooks.channel_drain", [channel.pk])]  # the first event's
    assert not WebhookDelivery.objects.exclude(status="succeeded").exists()


def test_concurrent_drains_of_one_channel_send_each_delivery_once(store, receiver):
    channel = channel_for(store, receiver.url)
    events = [record_order_completed(store, order_id=n) for n in range(40)]

    counts = run_at_once(lambda: channel_drain(channel_id=channel.pk), 4)

    assert not [count for count in counts if isinstance(count, BaseException)], counts
    assert sum(counts) == 40
    assert sorted(delivered_ids(receiver)) == sorted(event.id for event in events)
    assert set(WebhookDelivery.objects.values_list("status", "attempts")) == {("succeeded", 1)}


def test_a_drain_out_of_time_queues_its_successor(store, receiver, settings):
    settings.WEBHOOKS_DRAIN_SECONDS = 0  # every drain claims one delivery, then hands over
    channel = channel_for(store, receiver.url)
    for order_id in range(3):
        record_order_completed(store, order_id=order_id)
    app.control.purge()

    assert channel_drain(channel_id=channel.pk) == 1

    assert queued() == [("webhooks.channel_drain", [channel.pk])]
    statuses = sorted(WebhookDelivery.objects.values_list("status", flat=True))
    assert statuses == ["pending", "pending", "succeeded"]


def test_a_drain_settles_deliveries_of_a_channel_disabled_meanwhile_and_goes_on(
    store, other_store, receiver
):
    channel = channel_for(store, receiver.url)
    for order_id in range(2):
        record_order_completed(store, order_id=order_id)
    # disabled by a write that did not settle its pending deliveries (as a racing one)
    WebhookChannel.objects.filter(pk=channel.pk).update(enabled=False)

    assert channel_drain(channel_id=channel.pk) == 2

    assert receiver.received() == []
    assert set(WebhookDelivery.objects.values_list("status", "attempts")) == {("disabled", 0)}


def test_a_drain_sends_only_its_own_channels_deliveries(store, other_store, receiver):
    channel = channel_for(store, receiver.url)
    channel_for(other_store, receiver.url)
    mine = record_order_completed(store, order_id=1)
    record_order_completed(other_store, order_id=1)

    assert channel_drain(channel_id=channel.pk) == 1

    assert delivered_ids(receiver) == [mine.id]
    assert WebhookDelivery.objects.get(store=other_store).status == "pending"


def test_without_the_cache_every_new_delivery_queues_a_drain(store, receiver):
    # the coalescing marker cannot be read: queue anyway (a drain finding nothing just ends)
    channel = channel_for(store, receiver.url)

    with override_settings(CACHES=dead_redis_caches()):
        for order_id in range(2):
            record_order_completed(store, order_id=order_id)

    assert queued() == [("webhooks.channel_drain", [channel.pk])] * 2


def test_a_drain_that_could_not_be_queued_does_not_hold_back_the_next_one(
    store, receiver, monkeypatch
):
    from kombu.exceptions import OperationalError

    channel = channel_for(store, receiver.url)

    def broker_refuses(*args, **kwargs):
        raise OperationalError("the broker refused the message")

    with monkeypatch.context() as patch:
        patch.setattr(app, "send_task", broker_refuses)
        record_order_completed(store, order_id=1)  # left to the sweeper
    assert queued() == []  # (the suite's settings have no pause after a failed publish)

    record_order_completed(store, order_id=2)

    assert queued() == [("webhooks.channel_drain", [channel.pk])]


def test_after_a_failed_publish_the_publisher_pauses_and_logs_once(
    store, receiver, monkeypatch, caplog, settings
):
    from kombu.exceptions import OperationalError

    settings.WEBHOOKS_BROKER_OUTAGE_PAUSE_SECONDS = 5
    channel_for(store, receiver.url)
    tries = []

    def broker_refuses(*args, **kwargs):
        tries.append(args)
        raise OperationalError("the broker is down")

    monkeypatch.setattr(app, "send_task", broker_refuses)
    with caplog.at_level("WARNING", logger="webhooks.deliveries.services"):
        for order_id in range(3):
            record_order_completed(store, order_id=order_id)

    # one try and one log line for the pause, not one per request; the deliveries wait in
    # PostgreSQL for the sweeper
    assert len(tries) == 1
    assert [r.getMessage()[:31] for r in caplog.records] == ["task broker unavailable: webhoo"]
    assert queued() == []
