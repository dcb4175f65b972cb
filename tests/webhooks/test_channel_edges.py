"""The edges of three channel rules, each pinned exactly at its boundary: a search by event
lists only enabled channels, a `whsec_` secret is 24 to 64 bytes, and recover's window is
[since, until)."""

import base64

import pytest

from tests.factories import WebhookChannelFactory
from tests.webhooks.helpers import record_order_completed
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db

URL = "/api/v2/webhook-channels"


def test_a_search_by_event_leaves_out_a_disabled_channel(auth_client, store, receiver):
    # given: two channels subscribed to order.completed, one of them disabled
    WebhookChannelFactory(store=store, url=f"{receiver.url}/on", name="On")
    WebhookChannelFactory(store=store, url=f"{receiver.url}/off", name="Off", enabled=False)

    # when
    by_event = auth_client.post(f"{URL}/search", {"event": "order.completed"}, format="json")
    everything = auth_client.post(f"{URL}/search", {}, format="json")

    # then: the event is sent to the enabled one only; the plain list still shows both
    assert [c["name"] for c in by_event.json()["data"]] == ["On"]
    assert sorted(c["name"] for c in everything.json()["data"]) == ["Off", "On"]


@pytest.mark.parametrize(("key_bytes", "status"), [(23, 422), (24, 200), (64, 200), (65, 422)])
def test_a_whsec_secret_is_24_to_64_bytes(auth_client, key_bytes, status):
    secret = "whsec_" + base64.b64encode(bytes(range(key_bytes))).decode()

    response = auth_client.put(f"{URL}/signing-secret", {"signing_secret": secret}, format="json")

    assert response.status_code == status, response.json()
    if status == 422:
        assert response.json()["param"] == "signing_secret"


def test_recover_takes_an_event_at_since_and_leaves_one_at_until(auth_client, store, receiver):
    # given: two events the channel missed (their deliveries failed)
    channel = WebhookChannelFactory(store=store, url=receiver.url)
    at_since = record_order_completed(store, order_id=1)
    at_until = record_order_completed(store, order_id=2)
    WebhookDelivery.objects.filter(channel=channel).update(status="failed")

    # when: the window starts exactly at the first and ends exactly at the second
    response = auth_client.post(
        f"{URL}/{channel.uid}/recover",
        {"since": at_since.occurred_at.isoformat(), "until": at_until.occurred_at.isoformat()},
        format="json",
    )

    # then: since is inside the window, until is not
    assert response.status_code == 202, response.json()
    assert response.json()["data"]["queued"] == 1
    pending = WebhookDelivery.objects.filter(channel=channel, status="pending")
    assert [delivery.event_id for delivery in pending] == [at_since.id]


@pytest.mark.django_db
def test_a_secret_with_a_nul_is_refused_and_the_schema_says_so(auth_client):
    secret = "a" * 20 + "\x00" + "b" * 20
    response = auth_client.put(f"{URL}/signing-secret", {"signing_secret": secret}, format="json")
    assert response.status_code == 422, response.content
    assert response.json()["param"] == "signing_secret"
    schema = auth_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    field = schema["components"]["schemas"]["WebhookSigningSecretRequest"]["properties"]
    assert field["signing_secret"]["pattern"] == "^[^\\u0000]*$"
