"""GET /api/v2/webhook-deliveries/{delivery}/attempts: each attempt, oldest first,
never the URL's path or query; the same store rules and 404s as the delivery."""

import pytest

from tests.factories import WebhookChannelFactory
from tests.webhooks.helpers import Reply, record_order_completed
from webhooks.dispatch.attempts import delivery_send
from webhooks.models import WebhookDelivery

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("quick_schedule")]

CREDENTIAL = "s3cr3tPathCredential"


def test_attempts_oldest_first_without_the_url(auth_client, store, receiver):
    WebhookChannelFactory(store=store, url=f"{receiver.url}/{CREDENTIAL}?token={CREDENTIAL}")
    replies = iter([Reply(500), Reply(200)])
    receiver.respond = lambda request: next(replies)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    delivery_send(delivery_id=delivery.pk)
    delivery_send(delivery_id=delivery.pk)

    response = auth_client.get(f"/api/v2/webhook-deliveries/{delivery.pk}/attempts")

    assert response.status_code == 200
    attempts = response.json()["data"]
    assert [(a["attempt"], a["response_status"], a["error"]) for a in attempts] == [
        (1, 500, None),
        (2, 200, None),
    ]
    assert all(a["attempted_at"] and a["duration_ms"] is not None for a in attempts)
    assert CREDENTIAL not in response.content.decode()


def test_an_attempt_without_an_answer_names_its_kind_only(auth_client, store):
    WebhookChannelFactory(store=store, url=f"http://127.0.0.1:9/{CREDENTIAL}")
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    delivery_send(delivery_id=delivery.pk)

    [attempt] = auth_client.get(f"/api/v2/webhook-deliveries/{delivery.pk}/attempts").json()["data"]

    assert attempt["response_status"] is None
    assert attempt["error"] == "connection refused"


def test_another_store_s_delivery_and_a_malformed_id_are_404(auth_client, other_store):
    WebhookChannelFactory(store=other_store)
    foreign = WebhookDelivery.objects.get(event=record_order_completed(other_store))

    for delivery in (foreign.pk, "not-a-uuid"):
        response = auth_client.get(f"/api/v2/webhook-deliveries/{delivery}/attempts")
        assert response.status_code == 404
