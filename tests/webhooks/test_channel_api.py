"""/api/v2/webhook-channels: the nine operations of the official SDK, the
envelope, abilities and store rules, and the synchronous test send against a real receiver."""

import json

import pytest
from standardwebhooks import Webhook

from events.models import Event
from tests.factories import TEST_SIGNING_SECRET, WebhookChannelFactory, make_api_key
from tests.webhooks.helpers import Reply, record_order_completed
from webhooks.models import WebhookChannel, WebhookDelivery

pytestmark = pytest.mark.django_db

URL = "/api/v2/webhook-channels"


def body(receiver, path="/a", **extra):
    return {"url": f"{receiver.url}{path}", "allowed_notifications": ["order.completed"], **extra}


def created(auth_client, receiver, path="/a", **extra):
    response = auth_client.post(URL, body(receiver, path, **extra), format="json")
    assert response.status_code == 201, response.json()
    return response.json()["data"]


def test_create_get_list_and_the_same_url_twice(auth_client, receiver):
    # when
    channel = created(auth_client, receiver, name="Fulfilment")
    again = auth_client.post(URL, body(receiver), format="json")
    # then
    assert set(channel) == {
        "id",
        "name",
        "url",
        "allowed_notifications",
        "signing_secret_configured",
        "enabled",
        "disabled_reason",
    }
    assert (channel["name"], channel["url"]) == ("Fulfilment", f"{receiver.url}/a")
    assert channel["signing_secret_configured"] is False
    assert again.status_code == 422 and again.json()["param"] == "url"
    assert auth_client.get(f"{URL}/{channel['id']}").json()["data"] == channel
    page = auth_client.get(URL, {"limit": 1}).json()
    assert page["data"] == [channel] and page["meta"]["total"] == 1


def test_put_needs_the_whole_representation_and_patch_takes_any_part(auth_client, receiver):
    channel = created(auth_client, receiver)
    path = f"{URL}/{channel['id']}"

    missing_name = auth_client.put(path, body(receiver, "/b"), format="json")
    replaced = auth_client.put(path, body(receiver, "/b", name=None), format="json")
    patched = auth_client.patch(path, {"name": "Renamed"}, format="json")

    assert missing_name.status_code == 422 and missing_name.json()["param"] == "name"
    assert replaced.status_code == 200 and replaced.json()["data"]["url"].endswith("/b")
    assert patched.json()["data"]["name"] == "Renamed"
    assert patched.json()["data"]["url"].endswith("/b")


def test_patch_enabled_turns_a_disabled_channel_back_on(auth_client, store, receiver):
    channel = WebhookChannelFactory(
        store=store, url=f"{receiver.url}/a", enabled=False, disabled_reason="gone"
    )

    response = auth_client.patch(f"{URL}/{channel.uid}", {"enabled": True}, format="json")

    assert response.status_code == 200
    assert (response.json()["data"]["enabled"], response.json()["data"]["disabled_reason"]) == (
        True,
        None,
    )
    channel.refresh_from_db()
    assert channel.enabled and channel.disabled_reason == ""


def test_delete_answers_the_channel_as_it_was(auth_client, receiver):
    channel = created(auth_client, receiver)

    response = auth_client.delete(f"{URL}/{channel['id']}")

    assert response.status_code == 200 and response.json()["data"] == channel
    assert auth_client.get(f"{URL}/{channel['id']}").status_code == 404
    assert not WebhookChannel.objects.exists()


def test_search_by_name_and_by_event(auth_client, receiver):
    created(auth_client, receiver, "/a", name="Fulfilment")
    created(auth_client, receiver, "/b", name="Accounting")
    coupons = created(auth_client, receiver, "/c", name="Coupons")
    auth_client.patch(
        f"{URL}/{coupons['id']}", {"allowed_notifications": ["coupon.created"]}, format="json"
    )

    by_name = auth_client.post(
        f"{URL}/search", {"search": {"value": "fulfil"}, "event": None}, format="json"
    )
    by_event = auth_client.post(
        f"{URL}/search", {"event": "order.completed", "limit": 1, "page": 2}, format="json"
    )

    assert [c["name"] for c in by_name.json()["data"]] == ["Fulfilment"]
    assert [c["name"] for c in by_event.json()["data"]] == ["Accounting"]
    assert by_event.json()["meta"]["total"] == 2
    too_many = auth_client.post(f"{URL}/search", {"limit": 101}, format="json")
    assert too_many.status_code == 422 and too_many.json()["param"] == "limit"


def test_signing_secret_is_write_only_and_signs_every_channel(auth_client, store, receiver):
    response = auth_client.put(
        f"{URL}/signing-secret", {"signing_secret": TEST_SIGNING_SECRET}, format="json"
    )
    short = auth_client.put(f"{URL}/signing-secret", {"signing_secret": "x" * 31}, format="json")
    not_base64 = auth_client.put(
        f"{URL}/signing-secret", {"signing_secret": "whsec_" + "!" * 40}, format="json"
    )

    assert response.status_code == 200
    assert response.json() == {"data": {"signing_secret_configured": True}}
    assert short.status_code == 422 and short.json()["param"] == "signing_secret"
    assert not_base64.status_code == 422 and not_base64.json()["param"] == "signing_secret"
    channel = created(auth_client, receiver)
    assert channel["signing_secret_configured"] is True
    assert TEST_SIGNING_SECRET not in json.dumps(auth_client.get(URL).json())


def test_a_plain_secret_is_the_hmac_key_itself(auth_client, store, receiver):
    plain = "a-plain-shared-secret-of-40-characters!!"
    auth_client.put(f"{URL}/signing-secret", {"signing_secret": plain}, format="json")
    channel = created(auth_client, receiver)

    response = auth_client.post(
        f"{URL}/{channel['id']}/test", {"event": "order.completed"}, format="json"
    )

    assert response.status_code == 200
    (request,) = receiver.received()
    Webhook(plain.encode()).verify(request.body, request.headers)


def test_test_send_is_signed_marked_test_and_never_journaled(auth_client, store, receiver):
    auth_client.put(f"{URL}/signing-secret", {"signing_secret": TEST_SIGNING_SECRET}, format="json")
    channel = created(auth_client, receiver)

    response = auth_client.post(
        f"{URL}/{channel['id']}/test", {"event": "order.completed"}, format="json"
    )

    assert response.status_code == 200
    assert response.json() == {
        "data": {"channel_id": channel["id"], "event": "order.completed", "status": "delivered"}
    }
    (request,) = receiver.received()
    payload = Webhook(TEST_SIGNING_SECRET).verify(request.body, request.headers)
    assert payload["test"] is True and payload["type"] == "order.completed"
    assert payload["data"] == {"total_cents": 4599, "currency": "EUR"}
    assert not Event.objects.exists() and not WebhookDelivery.objects.exists()


def test_a_real_event_carries_test_false(auth_client, store, receiver):
    from webhooks.dispatch.attempts import delivery_send

    WebhookChannelFactory(store=store, url=f"{receiver.url}/a")
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    delivery_send(delivery_id=delivery.pk)

    (request,) = receiver.received()
    assert Webhook(TEST_SIGNING_SECRET).verify(request.body, request.headers)["test"] is False


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (Reply(500, b"boom"), "the receiver answered HTTP 500"),
        (Reply(302, b"", headers={"Location": "/elsewhere"}), "the receiver answered HTTP 302"),
    ],
)
def test_test_send_failure_is_an_error_once_without_retry_or_redirect(
    auth_client, store, receiver, reply, said
):
    auth_client.put(f"{URL}/signing-secret", {"signing_secret": TEST_SIGNING_SECRET}, format="json")
    channel = created(auth_client, receiver)
    receiver.respond = lambda request: reply

    response = auth_client.post(
        f"{URL}/{channel['id']}/test", {"event": "order.completed"}, format="json"
    )

    assert response.status_code == 422
    assert response.json()["param"] == "url" and said in response.json()["message"]
    assert [request.path for request in receiver.received()] == ["/hooks/a"]


def test_test_send_of_an_event_the_channel_is_not_allowed(auth_client, receiver):
    channel = created(auth_client, receiver)

    response = auth_client.post(
        f"{URL}/{channel['id']}/test", {"event": "coupon.created"}, format="json"
    )

    assert response.status_code == 422 and response.json()["param"] == "event"
    assert receiver.received() == []


def test_read_only_credential_sees_origins_and_cannot_write(
    auth_client, user, store, client_for, receiver
):
    channel = created(auth_client, receiver)
    reader = client_for(make_api_key(user, abilities=["webhook:read"]))

    listed = reader.get(URL).json()["data"]
    searched = reader.post(f"{URL}/search", {"event": "order.completed"}, format="json")
    refused = reader.post(URL, body(receiver, "/b"), format="json")

    assert listed[0]["url"] == receiver.url.removesuffix("/hooks")
    assert searched.status_code == 200
    assert [found["url"] for found in searched.json()["data"]] == [listed[0]["url"]]
    assert refused.status_code == 403
    assert reader.get(f"{URL}/{channel['id']}").json()["data"]["url"] == listed[0]["url"]


def test_another_store_s_channel_and_a_malformed_id_are_404(auth_client, other_store, receiver):
    foreign = WebhookChannelFactory(store=other_store, url=f"{receiver.url}/x")

    for path in (f"{URL}/{foreign.uid}", f"{URL}/not-a-uuid"):
        assert auth_client.get(path).status_code == 404
        assert auth_client.delete(path).status_code == 404
    assert WebhookChannel.objects.filter(pk=foreign.pk).exists()


def test_an_idempotency_key_is_accepted_never_required(auth_client, receiver):
    headers = {"HTTP_IDEMPOTENCY_KEY": "create-1"}
    first = auth_client.post(URL, body(receiver), format="json", **headers)
    again = auth_client.post(URL, body(receiver), format="json", **headers)

    assert (first.status_code, again.status_code) == (201, 201)
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["data"] == first.json()["data"]
    assert WebhookChannel.objects.count() == 1


def test_the_longest_secret_of_multibyte_characters_is_kept(auth_client, receiver):
    longest = "é" * 255  # 510 UTF-8 bytes

    response = auth_client.put(f"{URL}/signing-secret", {"signing_secret": longest}, format="json")

    assert response.status_code == 200
    channel = created(auth_client, receiver)
    auth_client.post(f"{URL}/{channel['id']}/test", {"event": "order.completed"}, format="json")
    (request,) = receiver.received()
    Webhook(longest.encode()).verify(request.body, request.headers)
