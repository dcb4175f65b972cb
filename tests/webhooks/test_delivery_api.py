import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from events.services import record
from tests.webhooks.helpers import Reply, channel_for, record_order_completed
from webhooks.dispatch.attempts import delivery_send
from webhooks.dispatch.failures import channel_enabled_set
from webhooks.models import WebhookDelivery

LIST_URL = "/api/v2/webhook-deliveries"

DELIVERY_FIELDS = {
    "id",
    "event_id",
    "event_type",
    "status",
    "channel_id",
    "destination_origin",
    "attempts",
    "response_status",
    "response_body",
    "next_attempt_at",
    "created_at",
    "updated_at",
}


@pytest.fixture
def channel(store, receiver):
    return channel_for(store, receiver.url)


def deliver(store, order_id=1):
    return WebhookDelivery.objects.get(event=record_order_completed(store, order_id=order_id))


def record_coupon_created(store, coupon_id=1):
    with transaction.atomic():
        event = record(store=store, type="coupon.created", subject=("coupon", coupon_id))
    return WebhookDelivery.objects.get(event=event)


def test_event_types_come_from_the_registry(auth_client):
    response = auth_client.get("/api/v2/webhook-event-types")

    assert response.status_code == 200
    types = {item["type"]: item for item in response.json()["data"]}
    assert set(types) == {"order.completed", "coupon.created", "coupon.updated", "coupon.deleted"}
    assert types["order.completed"]["version"] == 1
    assert types["order.completed"]["description"]


def test_list_is_paginated_newest_first(auth_client, store, channel):
    deliveries = [deliver(store, order_id=n) for n in range(1, 4)]

    response = auth_client.get(LIST_URL, {"limit": 2})

    assert response.status_code == 200
    body = response.json()
    assert [d["id"] for d in body["data"]] == [str(deliveries[2].pk), str(deliveries[1].pk)]
    assert body["meta"]["total"] == 3 and body["meta"]["last_page"] == 2
    assert body["links"]["next"].endswith("limit=2&page=2")
    assert set(body["data"][0]) == DELIVERY_FIELDS


def test_delivery_resource_shows_the_origin_only(auth_client, store, receiver, channel):
    delivery = deliver(store)

    response = auth_client.get(f"{LIST_URL}/{delivery.pk}")

    assert response.status_code == 200
    data = response.json()["data"]
    assert data["id"] == str(delivery.pk)
    assert data["event_id"] == delivery.event_id
    assert data["event_type"] == "order.completed"
    assert data["status"] == "pending"
    assert data["attempts"] == 0
    assert data["response_status"] is None and data["response_body"] is None
    assert data["destination_origin"] == receiver.url.removesuffix("/hooks")
    assert "/hooks" not in str(response.json())


def test_list_filters(auth_client, store, receiver, channel):
    receiver.respond = lambda request: Reply(200)
    sent = deliver(store, order_id=1)
    delivery_send(delivery_id=sent.pk)
    waiting = deliver(store, order_id=2)
    coupon = record_coupon_created(store)

    def ids(params):
        response = auth_client.get(LIST_URL, params)
        assert response.status_code == 200, response.json()
        return {d["id"] for d in response.json()["data"]}

    assert ids({"status": "succeeded"}) == {str(sent.pk)}
    assert ids({"status": "pending"}) == {str(waiting.pk), str(coupon.pk)}
    assert ids({"event_type": "coupon.created"}) == {str(coupon.pk)}
    assert ids({"event_id": waiting.event_id}) == {str(waiting.pk)}
    assert ids({"status": "failed"}) == set()


@pytest.mark.parametrize(
    "params",
    [
        {"status": "done"},
        {"event_type": "order.shipped"},
        {"event_type": "x" * 121},
        {"event_id": "not-an-event"},
        {"event_id": "evt_" + "A" * 200},
        {"status": ""},
        {"event_type": ""},
        {"event_id": ""},
        {"limit": 101},
        {"page": 0},
    ],
)
def test_invalid_filters_are_422(auth_client, params):
    response = auth_client.get(LIST_URL, params)

    assert response.status_code == 422
    assert response.json()["param"] == next(iter(params))


@pytest.mark.parametrize("name", ["status", "event_type", "event_id"])
def test_a_filter_sent_empty_is_refused_not_ignored(auth_client, name):
    # django-filter would read `?status=` as "no filter" and list everything
    response = auth_client.get(f"{LIST_URL}?{name}=")

    assert response.status_code == 422
    assert response.json()["errors"] == {name: ["must not be empty"]}


def test_other_stores_deliveries_are_invisible(auth_client, other_store, receiver):
    channel_for(other_store, receiver.url)
    theirs = deliver(other_store)

    assert auth_client.get(LIST_URL).json()["data"] == []
    assert auth_client.get(f"{LIST_URL}/{theirs.pk}").status_code == 404
    replay = auth_client.post(f"{LIST_URL}/{theirs.pk}/replay", {})
    assert replay.status_code == 404
    assert WebhookDelivery.objects.count() == 1


# a fixed unknown id: pytest-xdist needs the same test ids in every worker
@pytest.mark.parametrize(
    "delivery_id", ["not-a-uuid", "123", "5b0f2c1e-8a4d-4c6b-9e2f-3d7a1b6c9e80"]
)
def test_unknown_or_malformed_delivery_is_404(auth_client, delivery_id):
    assert auth_client.get(f"{LIST_URL}/{delivery_id}").status_code == 404
    assert auth_client.post(f"{LIST_URL}/{delivery_id}/replay", {}).status_code == 404


def test_replay_creates_a_new_pending_delivery_of_the_same_event(
    auth_client, store, receiver, channel
):
    # given a delivery that was sent
    original = deliver(store)
    delivery_send(delivery_id=original.pk)

    # when
    response = auth_client.post(f"{LIST_URL}/{original.pk}/replay", {})

    # then
    assert response.status_code == 201, response.json()
    data = response.json()["data"]
    assert data["id"] != str(original.pk)
    assert data["event_id"] == original.event_id
    assert data["status"] == "pending"
    assert data["attempts"] == 0
    assert data["response_status"] is None
    assert data["destination_origin"] == receiver.url.removesuffix("/hooks")
    # the business action is not repeated: still one event, now two deliveries of it
    assert WebhookDelivery.objects.filter(event_id=original.event_id).count() == 2
    assert delivery_send(delivery_id=data["id"]) == "succeeded"
    assert [r.headers["webhook-id"] for r in receiver.received()] == [original.event_id] * 2


def test_replay_without_a_body_is_accepted(auth_client, store, channel):
    original = deliver(store)

    response = auth_client.post(f"{LIST_URL}/{original.pk}/replay")

    assert response.status_code == 201


@pytest.mark.parametrize(
    "body", [{"url": "https://evil.example.com"}, {"payload": {}}, {"query": "x"}]
)
def test_replay_body_must_be_an_empty_object(auth_client, store, channel, body):
    original = deliver(store)

    response = auth_client.post(f"{LIST_URL}/{original.pk}/replay", body)

    assert response.status_code == 422
    assert response.json()["param"] == next(iter(body))
    assert WebhookDelivery.objects.count() == 1


def test_replay_body_must_be_an_object(auth_client, store, channel):
    original = deliver(store)

    response = auth_client.post(f"{LIST_URL}/{original.pk}/replay", [], format="json")

    assert response.status_code == 400


def test_replay_to_a_disabled_channel_is_422(auth_client, store, channel):
    original = deliver(store)
    channel_enabled_set(channel=channel, enabled=False)

    response = auth_client.post(f"{LIST_URL}/{original.pk}/replay", {})

    assert response.status_code == 422
    assert response.json()["param"] == "destination"


def test_replay_without_a_channel_is_422(auth_client, store, channel):
    original = deliver(store)
    auth_client.delete("/api/v2/webhook-destination")

    response = auth_client.post(f"{LIST_URL}/{original.pk}/replay", {})

    assert response.status_code == 422
    original.refresh_from_db()
    assert original.status == "disabled"


def test_replay_with_the_same_key_is_replayed_not_repeated(auth_client, store, channel):
    original = deliver(store)
    headers = {"HTTP_IDEMPOTENCY_KEY": "replay-key-1"}

    first = auth_client.post(f"{LIST_URL}/{original.pk}/replay", {}, **headers)
    second = auth_client.post(f"{LIST_URL}/{original.pk}/replay", {}, **headers)

    assert first.status_code == second.status_code == 201
    assert second.json() == first.json()
    assert second["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert WebhookDelivery.objects.count() == 2


def test_replay_key_reused_for_a_different_request_is_409(auth_client, store, channel):
    first_delivery, second_delivery = deliver(store, 1), deliver(store, 2)
    headers = {"HTTP_IDEMPOTENCY_KEY": "replay-key-2"}
    auth_client.post(f"{LIST_URL}/{first_delivery.pk}/replay", {}, **headers)

    other_delivery = auth_client.post(f"{LIST_URL}/{second_delivery.pk}/replay", {}, **headers)
    other_body = auth_client.post(f"{LIST_URL}/{first_delivery.pk}/replay", {"x": 1}, **headers)

    assert other_delivery.status_code == 409
    assert other_delivery.json()["param"] == "Idempotency-Key"
    assert other_body.status_code == 409
    assert WebhookDelivery.objects.count() == 3


@pytest.mark.parametrize("key", ["", "short", "k" * 7, "k" * 256])
def test_replay_key_length_is_8_to_255(auth_client, store, channel, key):
    original = deliver(store)

    response = auth_client.post(f"{LIST_URL}/{original.pk}/replay", {}, HTTP_IDEMPOTENCY_KEY=key)

    # an empty header is a key too short, not an absent one
    assert response.status_code == 422
    assert response.json()["param"] == "Idempotency-Key"
    assert WebhookDelivery.objects.count() == 1


@pytest.mark.parametrize("key", ["k" * 8, "k" * 255])
def test_replay_keys_of_8_and_255_characters_are_accepted(auth_client, store, channel, key):
    original = deliver(store)
    url = f"{LIST_URL}/{original.pk}/replay"

    first = auth_client.post(url, {}, HTTP_IDEMPOTENCY_KEY=key)
    again = auth_client.post(url, {}, HTTP_IDEMPOTENCY_KEY=key)

    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert WebhookDelivery.objects.count() == 2


def test_replay_needs_webhook_write(client_for, user, store, channel):
    from tests.factories import make_api_key

    original = deliver(store)
    client = client_for(make_api_key(user, abilities=["webhook:read"]))

    assert client.get(f"{LIST_URL}/{original.pk}").status_code == 200
    assert client.post(f"{LIST_URL}/{original.pk}/replay", {}).status_code == 403


def test_list_query_count_does_not_depend_on_the_page_size(auth_client, store, channel):
    for order_id in range(12):
        deliver(store, order_id=order_id)
    counts = {}
    for limit in (1, 12):
        for _ in range(2):  # warm caches alike (the identity: read, then confirmed)
            auth_client.get(LIST_URL, {"limit": limit})
        with CaptureQueriesContext(connection) as queries:
            body = auth_client.get(LIST_URL, {"limit": limit}).json()
        assert len(body["data"]) == limit
        counts[limit] = len(queries)
    assert counts[1] == counts[12], counts
