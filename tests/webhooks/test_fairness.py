"""No store can starve the others: a bounded number of in-flight sends per channel, one
sweeper message per channel, and a cap on replays per store (API and admin).

Drains and sends run in the test process on real threads against the real PostgreSQL and a
real local receiver; the queue is the real Redis broker, read without consuming it.
"""

import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from config.celery import app
from tests.concurrency import run_at_once
from tests.factories import StoreFactory
from tests.servers import wait_for
from tests.webhooks.helpers import (
    HeldReceiver,
    channel_for,
    queued,
    record_order_completed,
)
from webhooks.dispatch.attempts import channel_drain, delivery_claim, delivery_send
from webhooks.dispatch.queueing import deliveries_sweep
from webhooks.models import WebhookDelivery

LIST_URL = "/api/v2/webhook-deliveries"


@pytest.fixture(autouse=True)
def two_sends_at_once(empty_queue, settings):
    """Sends long enough to overlap (receivers hold them), two at a time per channel."""
    settings.WEBHOOKS_TIMEOUT_SECONDS = 5
    settings.WEBHOOKS_CHANNEL_CONCURRENCY = 2


@pytest.mark.django_db(transaction=True)
def test_a_channel_has_at_most_its_concurrency_of_sends_in_flight(store, receiver):
    # given a receiver that holds every request, and due deliveries
    channel = channel_for(store, receiver.url)
    held = HeldReceiver(receiver)
    for order_id in range(6):
        record_order_completed(store, order_id=order_id)
    app.control.purge()
    waiting = WebhookDelivery.objects.order_by("next_attempt_at").last()

    # when four drains and a single send start at once
    outcome = {}

    def drains():
        outcome["drains"] = run_at_once(lambda: channel_drain(channel_id=channel.pk), 4)

    runner = threading.Thread(target=drains)
    runner.start()
    wait_for(lambda: held.in_flight == 2, timeout=10, what="two sends in flight")
    # then the others found no free slot and ended without a send; a single send too
    time_to_settle = 0.5
    threading.Event().wait(time_to_settle)
    assert held.in_flight == 2
    sent_alone = run_at_once(lambda: delivery_send(delivery_id=waiting.pk), 1)
    assert sent_alone == [None]
    waiting.refresh_from_db()
    assert (waiting.status, waiting.attempts) == ("pending", 0)

    held.release.set()
    runner.join(timeout=30)
    counts = outcome["drains"]
    assert not [c for c in counts if isinstance(c, BaseException)], counts
    assert sorted(counts)[:2] == [0, 0]  # two drains ended at once, without a slot
    assert sum(counts) == 6
    assert held.most_in_flight == 2
    assert set(WebhookDelivery.objects.values_list("status", "attempts")) == {("succeeded", 1)}


@pytest.mark.django_db(transaction=True)
def test_a_drain_refused_a_slot_leaves_its_deliveries_to_the_slot_holder(store, receiver, settings):
    # given one slot, held by a send whose receiver holds the request
    settings.WEBHOOKS_CHANNEL_CONCURRENCY = 1
    channel = channel_for(store, receiver.url)
    held = HeldReceiver(receiver)
    first = WebhookDelivery.objects.get(event=record_order_completed(store, order_id=1))
    sender = threading.Thread(
        target=lambda: run_at_once(lambda: delivery_send(delivery_id=first.pk), 1)
    )
    sender.start()
    wait_for(lambda: held.in_flight == 1, timeout=10, what="the first send in flight")

    # when a delivery is recorded meanwhile and its drain finds the slot taken
    record_order_completed(store, order_id=2)
    app.control.purge()
    assert run_at_once(lambda: channel_drain(channel_id=channel.pk), 1) == [0]
    assert queued() == []

    # then the holder, once it lets go, queues a drain for what is still due
    held.release.set()
    sender.join(timeout=30)
    assert queued() == [("webhooks.channel_drain", [channel.pk])]


@pytest.mark.django_db(transaction=True)
def test_sweeper_queues_one_drain_per_channel_not_one_message_per_delivery(receiver):
    busy, quiet = StoreFactory(), StoreFactory()
    busy_channel = channel_for(busy, receiver.url)
    quiet_channel = channel_for(quiet, receiver.url)
    for order_id in range(300):
        record_order_completed(busy, order_id=order_id)
    record_order_completed(quiet)
    app.control.purge()
    WebhookDelivery.objects.update(enqueued_at=timezone.now() - timedelta(hours=1))

    assert deliveries_sweep() == 301

    assert sorted(queued()) == [
        ("webhooks.channel_drain", [busy_channel.pk]),
        ("webhooks.channel_drain", [quiet_channel.pk]),
    ]


@pytest.mark.django_db
def test_sweeper_queues_a_lost_delivery_of_a_deleted_channel_as_its_own_send(store, receiver):
    from webhooks.channels.destination import destination_delete

    # given a delivery a worker claimed and then died on, whose channel was deleted since
    channel_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    assert delivery_claim(delivery_id=delivery.pk) is not None
    destination_delete(store=store)
    long_ago = timezone.now() - timedelta(hours=1)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        lease_until=long_ago, enqueued_at=long_ago, next_attempt_at=long_ago
    )

    # when the sweeper runs: there is no channel to drain, so the delivery is sent alone
    assert deliveries_sweep() == 1
    assert queued() == [("webhooks.delivery_send", [str(delivery.pk)])]

    # then that send settles it without reaching anyone
    assert delivery_send(delivery_id=delivery.pk) is None
    delivery.refresh_from_db()
    assert (delivery.status, delivery.channel_id) == ("failed", None)
    assert receiver.received() == []


# --- the replay cap ----------------------------------------------------------------------


@pytest.fixture
def replay_cap(settings):
    settings.WEBHOOKS_REPLAY_LIMIT = 2
    settings.WEBHOOKS_REPLAY_WINDOW_SECONDS = 600


@pytest.mark.django_db
def test_replays_beyond_the_cap_are_429_in_the_envelope(auth_client, store, receiver, replay_cap):
    channel_for(store, receiver.url)
    original = WebhookDelivery.objects.get(event=record_order_completed(store))

    statuses = [
        auth_client.post(f"{LIST_URL}/{original.pk}/replay", {}).status_code for _ in range(2)
    ]
    refused = auth_client.post(f"{LIST_URL}/{original.pk}/replay", {})

    assert statuses == [201, 201]
    assert refused.status_code == 429
    body = refused.json()
    assert (body["type"], body["code"], body["status"]) == (
        "rate_limit_error",
        "rate_limit_exceeded",
        429,
    )
    assert "replays" in body["message"]
    assert 1 <= int(refused["Retry-After"]) <= 600
    assert "X-RateLimit-Remaining" not in refused  # not the credential's request budget
    assert WebhookDelivery.objects.filter(event_id=original.event_id).count() == 3


@pytest.mark.django_db
def test_the_replay_cap_counts_a_sliding_window_per_store(
    auth_client, store, receiver, replay_cap, other_store
):
    channel_for(store, receiver.url)
    channel_for(other_store, receiver.url)
    original = WebhookDelivery.objects.get(event=record_order_completed(store))
    theirs = WebhookDelivery.objects.get(event=record_order_completed(other_store))
    from webhooks.deliveries.services import delivery_replay

    older = delivery_replay(store=store, delivery_id=original.pk)
    delivery_replay(store=store, delivery_id=original.pk)
    # another store's replays have their own budget
    delivery_replay(store=other_store, delivery_id=theirs.pk)
    delivery_replay(store=other_store, delivery_id=theirs.pk)
    assert auth_client.post(f"{LIST_URL}/{original.pk}/replay", {}).status_code == 429

    # the oldest replay leaves the window: room for one more, and Retry-After says when
    # the next one leaves
    WebhookDelivery.objects.filter(pk=older.pk).update(
        created_at=timezone.now() - timedelta(seconds=601)
    )
    assert auth_client.post(f"{LIST_URL}/{original.pk}/replay", {}).status_code == 201
    refused = auth_client.post(f"{LIST_URL}/{original.pk}/replay", {})
    assert refused.status_code == 429
    assert 590 <= int(refused["Retry-After"]) <= 601


@pytest.mark.django_db(transaction=True)
def test_concurrent_replays_cannot_pass_the_cap_together(store, receiver, settings):
    from webhooks.deliveries.services import delivery_replay

    settings.WEBHOOKS_REPLAY_LIMIT = 3
    channel_for(store, receiver.url)
    original = WebhookDelivery.objects.get(event=record_order_completed(store))

    outcomes = run_at_once(lambda: delivery_replay(store=store, delivery_id=original.pk), 8)

    refused = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(refused) == 5
    assert {type(error).__name__ for error in refused} == {"RateLimited"}
    assert WebhookDelivery.objects.filter(replay_of=original.pk).count() == 3


@pytest.mark.django_db
def test_the_admin_replay_action_is_capped_too(admin_client, store, receiver, replay_cap):
    channel_for(store, receiver.url)
    originals = [
        WebhookDelivery.objects.get(event=record_order_completed(store, order_id=n))
        for n in range(3)
    ]

    response = admin_client.post(
        "/admin/webhooks/webhookdelivery/",
        {"action": "replay", "_selected_action": [str(d.pk) for d in originals]},
        follow=True,
    )

    assert response.status_code == 200
    assert WebhookDelivery.objects.filter(replay_of__isnull=False).count() == 2
    shown = [str(message) for message in response.context["messages"]]
    assert sum("replayed as" in message for message in shown) == 2
    assert any("replays per store" in m and "retry after" in m for m in shown), shown


@pytest.mark.django_db
def test_a_capped_replay_keeps_its_idempotency_key_usable(auth_client, store, receiver, replay_cap):
    from webhooks.deliveries.services import delivery_replay

    channel_for(store, receiver.url)
    original = WebhookDelivery.objects.get(event=record_order_completed(store))
    first = delivery_replay(store=store, delivery_id=original.pk)
    delivery_replay(store=store, delivery_id=original.pk)
    url = f"{LIST_URL}/{original.pk}/replay"

    refused = auth_client.post(url, {}, HTTP_IDEMPOTENCY_KEY="replay-after-the-cap")
    WebhookDelivery.objects.filter(pk=first.pk).update(
        created_at=timezone.now() - timedelta(seconds=601)
    )
    retried = auth_client.post(url, {}, HTTP_IDEMPOTENCY_KEY="replay-after-the-cap")

    # a 429 is not stored under the key: the same key is tried again once there is room
    assert refused.status_code == 429
    assert retried.status_code == 201, retried.json()
    assert "Idempotent-Replayed" not in retried


@pytest.mark.django_db(transaction=True)
def test_a_dead_workers_slots_come_back_when_their_lease_runs_out(store, receiver, settings):
    from webhooks.dispatch.slots import slots_take

    settings.WEBHOOKS_LEASE_SECONDS = 1.5
    channel = channel_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    # another worker takes both slots of the channel and dies: nothing ever releases them
    assert slots_take(channel.pk) is not None
    assert slots_take(channel.pk) is not None
    assert delivery_send(delivery_id=delivery.pk) is None

    # once their lease has run out they are free again
    wait_for(
        lambda: delivery_send(delivery_id=delivery.pk) == "succeeded",
        timeout=10,
        interval=0.2,
        what="the send, once the dead worker's slot leases ran out",
    )
    assert len(receiver.received()) == 1
