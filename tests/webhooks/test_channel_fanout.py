"""Every event goes to every channel of the store whose allowed_notifications
include it, one delivery per channel, each signed with the store's secret and replayed to its
own channel."""

import pytest
from standardwebhooks import Webhook

from tests.factories import TEST_SIGNING_SECRET, WebhookChannelFactory
from tests.webhooks.helpers import record_order_completed
from webhooks.deliveries.services import delivery_replay
from webhooks.dispatch.attempts import delivery_send
from webhooks.models import WebhookDelivery

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("quick_schedule")]


def test_one_delivery_per_channel_allowed_the_event(store, other_store, receiver):
    # given: two channels allowed order.completed (one disabled), one that is not, and a
    # channel of another store
    first = WebhookChannelFactory(store=store, url=f"{receiver.url}/a")
    second = WebhookChannelFactory(store=store, url=f"{receiver.url}/b")
    off = WebhookChannelFactory(store=store, url=f"{receiver.url}/c", enabled=False)
    WebhookChannelFactory(store=store, url=f"{receiver.url}/d", event_types=["coupon.created"])
    WebhookChannelFactory(store=other_store, url=f"{receiver.url}/e")

    # when
    event = record_order_completed(store)

    # then
    deliveries = {d.channel_id: d.status for d in WebhookDelivery.objects.filter(event=event)}
    # the disabled one gets none (recover sends it what it missed once enabled again)
    assert deliveries == {first.pk: "pending", second.pk: "pending"}
    assert off.pk not in deliveries
    for delivery in WebhookDelivery.objects.filter(event=event, status="pending"):
        assert delivery_send(delivery_id=delivery.pk) == "succeeded"
    received = receiver.received()
    assert sorted(request.path for request in received) == ["/hooks/a", "/hooks/b"]
    for request in received:
        assert Webhook(TEST_SIGNING_SECRET).verify(request.body, request.headers)["id"] == event.id


def test_a_replay_goes_to_the_delivery_s_own_channel(store, receiver):
    # given: two channels, each with its delivery of one event
    first = WebhookChannelFactory(store=store, url=f"{receiver.url}/a")
    second = WebhookChannelFactory(store=store, url=f"{receiver.url}/b")
    event = record_order_completed(store)
    original = WebhookDelivery.objects.get(event=event, channel=second)

    # when
    replayed = delivery_replay(store=store, delivery_id=original.pk)

    # then
    assert (replayed.channel_id, replayed.event_id) == (second.pk, event.pk)
    assert first.pk != second.pk
    delivery_send(delivery_id=replayed.pk)
    assert [request.path for request in receiver.received()] == ["/hooks/b"]


def test_the_delivery_history_names_each_delivery_s_channel(auth_client, store, receiver):
    first = WebhookChannelFactory(store=store, url=f"{receiver.url}/a")
    second = WebhookChannelFactory(store=store, url=f"{receiver.url}/b")
    event = record_order_completed(store)

    listed = auth_client.get("/api/v2/webhook-deliveries").json()["data"]
    one = WebhookDelivery.objects.get(event=event, channel=first)
    read = auth_client.get(f"/api/v2/webhook-deliveries/{one.pk}").json()["data"]

    assert sorted(item["channel_id"] for item in listed) == sorted(
        [str(first.uid), str(second.uid)]
    )
    assert read["channel_id"] == str(first.uid)
