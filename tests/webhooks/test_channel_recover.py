"""POST /api/v2/webhook-channels/{id}/recover: every retained event of the window
that the channel missed, exactly once; 409 for a disabled channel, 422 outside retention, and
bounded work per request."""

from datetime import timedelta

import pytest
from django.utils import timezone

from events.models import Event
from tests.factories import WebhookChannelFactory
from tests.webhooks.helpers import Reply, record_order_completed
from webhooks.dispatch.attempts import delivery_send
from webhooks.models import WebhookDelivery

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("quick_schedule")]


def recover(client, channel, **window):
    body = {"since": (timezone.now() - timedelta(hours=1)).isoformat(), **window}
    return client.post(f"/api/v2/webhook-channels/{channel.uid}/recover", body, format="json")


def send_pending(channel):
    for delivery in WebhookDelivery.objects.filter(channel=channel, status="pending"):
        delivery_send(delivery_id=delivery.pk)


def test_a_gone_receiver_then_recover_delivers_every_missed_event_once(
    auth_client, store, receiver
):
    # given: a receiver answering 410, which disables the channel, and events while it is off
    channel = WebhookChannelFactory(store=store, url=receiver.url)
    receiver.respond = lambda request: Reply(410)
    gone = record_order_completed(store, order_id=1)
    send_pending(channel)
    channel.refresh_from_db()
    assert (channel.enabled, channel.disabled_reason) == (False, "gone")
    missed = [record_order_completed(store, order_id=n) for n in (2, 3)]
    also_missed = record_order_completed(store, order_id=4)
    assert recover(auth_client, channel).status_code == 409
    # when: enabled again and the receiver well, one recover call, then another
    receiver.respond = lambda request: Reply(200)
    auth_client.patch(f"/api/v2/webhook-channels/{channel.uid}", {"enabled": True}, format="json")
    assert not WebhookDelivery.objects.filter(channel=channel, status="pending").exists()
    first = recover(auth_client, channel)
    send_pending(channel)
    again = recover(auth_client, channel)
    # then: each missed event once (the one answered 410 included); the second call queues 0
    assert first.status_code == 202 and first.json()["data"]["queued"] == 4
    assert again.status_code == 202 and again.json()["data"]["queued"] == 0
    received = [request.headers["webhook-id"] for request in receiver.received()[1:]]
    assert sorted(received) == sorted([gone.id, *(e.id for e in missed), also_missed.id])


def test_an_event_already_succeeded_or_pending_is_not_queued(auth_client, store, receiver):
    channel = WebhookChannelFactory(store=store, url=receiver.url)
    succeeded = record_order_completed(store, order_id=1)
    send_pending(channel)
    pending = record_order_completed(store, order_id=2)
    other_type = Event.objects.create(
        store=store, type="coupon.created", version=1, subject_type="coupon", subject_id="1"
    )

    response = recover(auth_client, channel)

    assert response.json()["data"]["queued"] == 0
    assert WebhookDelivery.objects.filter(event=succeeded).count() == 1
    assert WebhookDelivery.objects.filter(event=pending).count() == 1
    assert not WebhookDelivery.objects.filter(event=other_type).exists()


def test_a_window_outside_retention_or_backwards_is_422(auth_client, store, receiver):
    channel = WebhookChannelFactory(store=store, url=receiver.url)
    old = (timezone.now() - timedelta(days=31)).isoformat()
    now = timezone.now()

    outside = recover(auth_client, channel, since=old)
    backwards = recover(
        auth_client,
        channel,
        since=now.isoformat(),
        until=(now - timedelta(minutes=1)).isoformat(),
    )

    assert outside.status_code == 422 and outside.json()["param"] == "since"
    assert backwards.status_code == 422 and backwards.json()["param"] == "since"


def test_a_large_window_is_recovered_in_bounded_calls(auth_client, store, receiver, settings):
    # given: 7 failed deliveries, batches of 2 and at most 4 per call
    settings.WEBHOOKS_RECOVER_BATCH = 2
    settings.WEBHOOKS_RECOVER_MAX = 4
    channel = WebhookChannelFactory(store=store, url=receiver.url)
    events = [record_order_completed(store, order_id=n) for n in range(7)]
    WebhookDelivery.objects.filter(channel=channel).update(status="failed")
    # when
    first = recover(auth_client, channel).json()["data"]
    second = recover(auth_client, channel, since=first["until"]).json()["data"]
    third = recover(auth_client, channel).json()["data"]
    # then
    assert (first["queued"], second["queued"], third["queued"]) == (4, 3, 0)
    for event in events:
        assert WebhookDelivery.objects.filter(event=event, status="pending").count() == 1
