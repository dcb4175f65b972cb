"""The bound on the outbound calls a request waits for (webhooks/dispatch/outbound.py): a store's
one test
send and one DNS check in flight, across processes (429 with Retry-After), and a process's few
(503 with Retry-After); the test send's own budget; and a test event's body, which is a real
event's in shape (docs/decisions/hardening.md, Hardening V 1)."""

import json
import time

import pytest
from rest_framework.test import APIClient

from tests.factories import (
    MembershipFactory,
    UserFactory,
    WebhookChannelFactory,
    make_api_key,
)
from tests.webhooks.dns import HOST, PUBLIC_IPV4, FakeDns
from tests.webhooks.helpers import SilentReceiver, record_order_completed
from webhooks.dispatch.attempts import delivery_send
from webhooks.dispatch.outbound import DNS_CHECK, TEST_SEND, outbound_call
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db

URL = "/api/v2/webhook-channels"
TEST_EVENT = {"event": "order.completed"}


@pytest.fixture
def channel(store, receiver):
    return WebhookChannelFactory(store=store, url=f"{receiver.url}/a")


def send_test_event(auth_client, channel):
    return auth_client.post(f"{URL}/{channel.uid}/test", TEST_EVENT, format="json")


def auth_client_of(store):
    """A client with an owner's key of `store`."""
    user = UserFactory()
    MembershipFactory(user=user, store=store, role="owner")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_api_key(user)}")
    return client


def refusal(response, status: int, code: str) -> int:
    """The envelope of a refusal; its Retry-After in seconds."""
    assert response.status_code == status, response.json()
    assert response.json()["code"] == code
    assert response.json()["status"] == status
    assert response.json()["request_id"].startswith("req_")
    return int(response["Retry-After"])


def test_a_second_test_send_of_a_store_while_one_is_in_flight_is_a_429(
    auth_client, store, other_store, channel, receiver, settings
):
    settings.WEBHOOKS_TEST_SEND_TIMEOUT_SECONDS = 5
    # given: a test send of the store in flight (on any process: the key is shared)
    with outbound_call(kind=TEST_SEND, store_id=store.pk, seconds=5):
        # when
        refused = send_test_event(auth_client, channel)
        # then: another store's goes meanwhile
        other = WebhookChannelFactory(store=other_store, url=f"{receiver.url}/b")
        assert send_test_event(auth_client_of(other_store), other).status_code == 200
    retry_after = refusal(refused, 429, "rate_limit_exceeded")
    # at most until the call in flight is over: its budget and the key's margin
    assert 1 <= retry_after <= 7
    assert "X-RateLimit-Limit" not in refused  # not the credential's budget
    assert [request.path for request in receiver.received()] == ["/hooks/b"]
    # and once it is over, the store's next test send goes
    assert send_test_event(auth_client, channel).status_code == 200


def test_a_test_send_over_the_process_bound_is_a_503_and_frees_the_stores_key(
    auth_client, other_store, channel, receiver, settings
):
    settings.WEBHOOKS_OUTBOUND_CALLS_PER_PROCESS = 1
    settings.WEBHOOKS_TEST_SEND_TIMEOUT_SECONDS = 3
    # given: another store's call holds the process's one
    with outbound_call(kind=DNS_CHECK, store_id=other_store.pk, seconds=2):
        refused = send_test_event(auth_client, channel)
    assert refusal(refused, 503, "service_unavailable") == 3
    assert receiver.received() == []
    # then: the store's key was given back with the refusal, and the process's call too
    assert send_test_event(auth_client, channel).status_code == 200


def test_a_test_send_waits_for_its_own_budget_only(auth_client, store, settings):
    settings.WEBHOOKS_TIMEOUT_SECONDS = 10
    settings.WEBHOOKS_TEST_SEND_TIMEOUT_SECONDS = 0.5
    silent = SilentReceiver()
    try:
        channel = WebhookChannelFactory(store=store, url=f"{silent.url}/a")
        started = time.monotonic()
        response = send_test_event(auth_client, channel)
        took = time.monotonic() - started
    finally:
        silent.close()
    assert response.status_code == 422 and response.json()["param"] == "url"
    assert "timeout" in response.json()["message"]
    assert took < 3


def test_a_channel_create_while_the_stores_dns_check_is_in_flight_is_a_429(
    auth_client, store, channel, monkeypatch
):
    FakeDns(monkeypatch, PUBLIC_IPV4)
    body = {"url": f"https://{HOST}/in", "allowed_notifications": ["order.completed"]}
    with outbound_call(kind=DNS_CHECK, store_id=store.pk, seconds=2):
        refused = auth_client.post(URL, body, format="json")
        # a test send is another kind: the store may have one of each in flight
        assert send_test_event(auth_client, channel).status_code == 200
    assert 1 <= refusal(refused, 429, "rate_limit_exceeded") <= 4
    assert auth_client.post(URL, body, format="json").status_code == 201


def test_a_channel_create_over_the_process_bound_is_a_503(
    auth_client, store, settings, monkeypatch
):
    FakeDns(monkeypatch, PUBLIC_IPV4)
    settings.WEBHOOKS_OUTBOUND_CALLS_PER_PROCESS = 1
    body = {"url": f"https://{HOST}/in", "allowed_notifications": ["order.completed"]}
    with outbound_call(kind=TEST_SEND, store_id=None, seconds=2):
        refused = auth_client.post(URL, body, format="json")
    assert refusal(refused, 503, "service_unavailable") >= 1
    assert auth_client.post(URL, body, format="json").status_code == 201


def json_types(value):
    """The JSON type of every member, recursively (an object's by key)."""
    if isinstance(value, dict):
        return {key: json_types(member) for key, member in value.items()}
    return type(value).__name__


def test_a_test_event_has_the_shape_of_a_real_event_key_by_key(
    auth_client, store, channel, receiver
):
    # given: a real order.completed delivered to the channel, then a test event of that type
    delivery_send(delivery_id=WebhookDelivery.objects.get(event=record_order_completed(store)).pk)
    assert send_test_event(auth_client, channel).status_code == 200
    real, test = (json.loads(request.body) for request in receiver.received())
    # then: the same keys with the same JSON types, only `test` and the values differ
    assert json_types(test) == json_types(real)
    assert (real["test"], test["test"]) == (False, True)
    assert test["store_id"] == real["store_id"] == str(store.pk)
    assert test["id"].startswith("evt_test_") and test["subject"]["id"] == "test"
