"""The official SDK's `webhook_channels` (all nine calls) and `webhook_platform` (its four)
against our API under production settings, with a real Celery worker sending real events to a
real receiver that verifies every signature with `standardwebhooks`."""

import uuid

import pytest
from sellapp_sdk import SellAppClient
from standardwebhooks import Webhook

from tests.factories import TEST_SIGNING_SECRET
from tests.sdk.conftest import production_server
from tests.servers import wait_for
from tests.webhooks.helpers import record_order_completed
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.worker


@pytest.fixture(scope="module")
def webhook_api(django_db_setup, django_db_blocker, tmp_path_factory):
    """production_api, plus the opt-in production accepts for local receivers on loopback
    (config/settings/production.py DEVELOPMENT_OPT_INS)."""
    with production_server(
        tmp_path_factory, django_db_blocker, WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS="true"
    ) as base_url:
        yield base_url


@pytest.fixture
def client(webhook_api, sdk_owner) -> SellAppClient:
    _, store, key = sdk_owner
    return SellAppClient(api_key=key, store=store.slug, base_url=webhook_api, max_retries=0)


def verified(request) -> dict:
    return Webhook(TEST_SIGNING_SECRET).verify(request.body, request.headers)


def test_the_nine_channel_calls_and_the_four_platform_calls(
    client, sdk_owner, receiver, celery_worker
):
    _, store, _ = sdk_owner
    channels = client.webhook_channels
    # the store's signing secret, then a channel
    assert channels.rotate(signing_secret=TEST_SIGNING_SECRET).data.signing_secret_configured
    made = channels.create(
        url=f"{receiver.url}/a", allowed_notifications=["order.completed"], name="Fulfilment"
    ).data
    assert made.signing_secret_configured and made.name == "Fulfilment"
    assert [c.id for c in channels.list(limit=10).data] == [made.id]
    assert channels.get(made.id).data.url == f"{receiver.url}/a"
    found = channels.search(event="order.completed", limit=10).data
    assert [c.id for c in found] == [made.id]
    replaced = channels.replace(
        made.id, name=None, url=f"{receiver.url}/b", allowed_notifications=["order.completed"]
    ).data
    assert replaced.name is None and replaced.url.endswith("/b")
    assert channels.update(made.id, name="Renamed").data.name == "Renamed"

    # the test send: synchronous, signed, "test": true
    sent = channels.send(made.id, event="order.completed").data
    assert (str(sent.channel_id), sent.status) == (str(made.id), "delivered")
    [test_request] = receiver.received()
    assert verified(test_request)["test"] is True

    # a real event, sent by the worker, signed, "test": false
    event = record_order_completed(store)
    requests = wait_for(lambda: receiver.received()[1:] or None, timeout=30, what="delivery")
    payload = verified(requests[0])
    assert (payload["id"], payload["test"]) == (event.id, False)
    wait_for(
        lambda: WebhookDelivery.objects.filter(event=event, status="succeeded").exists(),
        timeout=30,
        what="the delivery's outcome",
    )

    # the platform's four calls
    platform = client.webhook_platform
    assert "order.completed" in {t.type for t in platform.list_webhook_event_types().data}
    [listed] = platform.list_webhook_deliveries(limit=10).data
    assert platform.get_webhook_delivery(listed.id).data.event_id == event.id
    replay = platform.replay_webhook_delivery(listed.id, idempotency_key=str(uuid.uuid4())).data
    assert replay.event_id == event.id and replay.id != listed.id
    again = wait_for(lambda: receiver.received()[2:] or None, timeout=30, what="the replay")
    assert verified(again[0])["id"] == event.id

    # delete (the SDK returns None; the API answers the channel as it was)
    channels.delete(made.id)
    assert list(channels.list(limit=10).data) == []
