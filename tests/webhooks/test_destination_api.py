import base64
import socket
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.abilities import ROLE_STAFF
from tests.concurrency import run_at_once
from tests.factories import MembershipFactory, UserFactory, WebhookChannelFactory, make_api_key
from tests.webhooks.helpers import Reply, channel_for, record_order_completed, store_secret
from webhooks.channels.serializers import MAX_EVENT_TYPES
from webhooks.dispatch.attempts import delivery_send
from webhooks.models import WebhookChannel, WebhookDelivery

URL = "/api/v2/webhook-destination"
PUBLIC_BODY = {"url": "https://hooks.example.com/in", "event_types": ["order.completed"]}


@pytest.fixture
def public_dns(monkeypatch):
    """Resolves every name to a public address (the machine has no outside DNS)."""
    real = socket.getaddrinfo
    answers = {"hooks.example.com": "93.184.216.34", "internal.example.com": "10.1.2.3"}

    def getaddrinfo(host, port, *args, **kwargs):
        if host in answers:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers[host], port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return answers


@pytest.fixture
def strict(settings, public_dns):
    """Production rules: no private channels."""
    settings.WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS = False


def test_get_before_any_channel_is_404(auth_client):
    response = auth_client.get(URL)

    assert response.status_code == 404
    assert response.json()["code"] == "resource_not_found"


def test_put_creates_channel_and_shows_secret_once(auth_client, store, strict):
    # when
    created = auth_client.put(URL, PUBLIC_BODY)
    fetched = auth_client.get(URL)

    # then
    assert created.status_code == 201
    data = created.json()["data"]
    assert data["url"] == PUBLIC_BODY["url"]
    assert data["event_types"] == ["order.completed"]
    assert data["enabled"] is True
    assert data["disabled_reason"] is None
    assert data["secret"].startswith("whsec_")
    assert len(base64.b64decode(data["secret"].removeprefix("whsec_"))) >= 24
    assert store_secret(store) == data["secret"]
    assert fetched.status_code == 200
    assert "secret" not in fetched.json()["data"]


def test_put_again_replaces_without_showing_the_secret(auth_client, strict):
    auth_client.put(URL, PUBLIC_BODY)

    response = auth_client.put(
        URL,
        {
            "url": "https://hooks.example.com/v2",
            "event_types": ["coupon.created", "order.completed"],
            "enabled": False,
        },
    )

    assert response.status_code == 200
    data = response.json()["data"]
    assert "secret" not in data
    assert data["url"] == "https://hooks.example.com/v2"
    assert data["event_types"] == ["coupon.created", "order.completed"]
    assert data["enabled"] is False
    assert data["disabled_reason"] == "user"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "https://hooks.example.com/in", "event_types": ["order.shipped"]}, "event_types"),
        ({"url": "https://hooks.example.com/in", "event_types": []}, "event_types"),
        ({"url": "https://hooks.example.com/in"}, "event_types"),
        ({"event_types": ["order.completed"]}, "url"),
        ({**PUBLIC_BODY, "secret_override": "x"}, "secret_override"),
        ({**PUBLIC_BODY, "url": "not a url"}, "url"),
        ({**PUBLIC_BODY, "url": "ftp://hooks.example.com/in"}, "url"),
        ({**PUBLIC_BODY, "url": "https://user:pw@hooks.example.com/in"}, "url"),
        ({**PUBLIC_BODY, "url": "https://hooks.example.com/" + "a" * 2100}, "url"),
        ({**PUBLIC_BODY, "url": 123}, "url"),
        ({**PUBLIC_BODY, "enabled": "yes"}, "enabled"),
        ({**PUBLIC_BODY, "event_types": [1]}, "event_types"),
        ({**PUBLIC_BODY, "url": "https://hooks.example.com/\u00e9"}, "url"),
        ({**PUBLIC_BODY, "url": "https://[2001:db8::1]/in"}, "url"),
        # Characters RFC 3986 does not allow in a path or query, unless percent-encoded.
        ({**PUBLIC_BODY, "url": "https://hooks.example.com/w[`"}, "url"),
        ({**PUBLIC_BODY, "url": "https://hooks.example.com/in?q={x}"}, "url"),
        ({**PUBLIC_BODY, "url": "https://hooks.example.com/a<b>|c^"}, "url"),
        ({**PUBLIC_BODY, "url": "https://hooks.example.com/100%"}, "url"),
    ],
)
def test_put_refuses_invalid_bodies(auth_client, strict, body, field):
    response = auth_client.put(URL, body)

    assert response.status_code == 422, response.json()
    assert response.json()["code"] == "validation_failed"
    assert field in response.json()["errors"]


def test_put_names_an_unknown_event_type_in_plain_words(auth_client, strict):
    body = {**PUBLIC_BODY, "event_types": ["order.completed", "order.shipped"]}

    response = auth_client.put(URL, body)

    assert response.status_code == 422
    assert response.json()["errors"] == {
        "event_types": ["unknown event type 'order.shipped'; see /api/v2/webhook-event-types"]
    }


def test_put_merges_duplicate_event_types_and_sorts_them(auth_client, store, strict):
    body = {**PUBLIC_BODY, "event_types": ["order.completed", "coupon.created", "order.completed"]}

    response = auth_client.put(URL, body)

    assert response.status_code == 201
    assert response.json()["data"]["event_types"] == ["coupon.created", "order.completed"]
    assert WebhookChannel.objects.get(store=store).event_types == [
        "coupon.created",
        "order.completed",
    ]


@pytest.mark.parametrize("size", [1, MAX_EVENT_TYPES])
def test_put_takes_1_to_max_event_types(auth_client, strict, size):
    body = {**PUBLIC_BODY, "event_types": ["order.completed"] * size}

    assert auth_client.put(URL, body).status_code == 201


def test_put_refuses_more_than_max_event_types(auth_client, strict):
    body = {**PUBLIC_BODY, "event_types": ["order.completed"] * (MAX_EVENT_TYPES + 1)}

    response = auth_client.put(URL, body)

    assert response.status_code == 422
    assert response.json()["param"] == "event_types"


def test_unknown_properties_are_refused_before_the_other_fields_are_checked(auth_client, strict):
    # a private URL would be refused too, but the body is refused for its unknown property
    body = {"url": "https://internal.example.com/in", "events": ["order.completed"]}

    response = auth_client.put(URL, body)

    assert response.status_code == 422
    assert response.json()["errors"] == {"events": ["is not a property of this request body"]}
    assert not WebhookChannel.objects.exists()


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com",
        "https://hooks.example.com:8443/in/v1?store=a-1&sig=x%2Fy;z=(1)*!$'~@:",
        "https://hooks.example.com/caf%C3%A9",
    ],
)
def test_put_accepts_every_rfc3986_path_and_query_character(auth_client, strict, url):
    response = auth_client.put(URL, {"url": url, "event_types": ["order.completed"]})

    assert response.status_code == 201, response.json()
    assert response.json()["data"]["url"] == url


@pytest.mark.parametrize(
    "url",
    [
        "http://hooks.example.com/in",  # plain http
        "https://10.0.0.7/in",  # private
        "https://192.168.1.20/in",  # private
        "https://127.0.0.1:8443/in",  # loopback
        "https://[::1]/in",  # loopback v6
        "https://localhost/in",  # a name resolving to loopback
        "https://internal.example.com/in",  # a name resolving to a private address
        "https://169.254.10.1/in",  # link-local
        "https://169.254.169.254/latest/meta-data",  # metadata
        "https://[fd00:ec2::254]/in",  # metadata v6
        "https://[::ffff:10.0.0.1]/in",  # private, IPv4-mapped
        "https://0.0.0.0/in",  # unspecified
    ],
)
def test_put_refuses_ssrf_channels_in_production(auth_client, strict, url):
    response = auth_client.put(URL, {"url": url, "event_types": ["order.completed"]})

    assert response.status_code == 422, response.json()
    assert response.json()["param"] == "url"
    assert not WebhookChannel.objects.exists()


@pytest.mark.parametrize("url", ["http://127.0.0.1:9000/in", "http://10.0.0.7/in"])
def test_private_and_http_channels_are_allowed_by_the_dev_flag(auth_client, settings, url):
    settings.WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS = True

    response = auth_client.put(URL, {"url": url, "event_types": ["order.completed"]})

    assert response.status_code == 201


@pytest.mark.parametrize(
    "url", ["https://169.254.169.254/latest/meta-data", "https://[fd00:ec2::254]/"]
)
def test_metadata_addresses_are_refused_even_with_the_dev_flag(auth_client, settings, url):
    settings.WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS = True

    response = auth_client.put(URL, {"url": url, "event_types": ["order.completed"]})

    assert response.status_code == 422


def test_rotate_secret_returns_a_new_secret(auth_client, store, strict):
    first = auth_client.put(URL, PUBLIC_BODY).json()["data"]["secret"]

    response = auth_client.post(f"{URL}/rotate-secret")

    assert response.status_code == 200
    rotated = response.json()["data"]["secret"]
    assert rotated.startswith("whsec_") and rotated != first
    channel = WebhookChannel.objects.get(store=store)
    assert store_secret(channel.store) == rotated
    assert store_secret(channel.store, previous=True) == first
    assert "secret" not in auth_client.get(URL).json()["data"]


def test_rotate_secret_without_channel_is_404(auth_client):
    assert auth_client.post(f"{URL}/rotate-secret").status_code == 404


def test_delete_removes_the_channel(auth_client, strict):
    auth_client.put(URL, PUBLIC_BODY)

    assert auth_client.delete(URL).status_code == 204
    assert auth_client.get(URL).status_code == 404
    assert auth_client.delete(URL).status_code == 404


def test_channel_is_per_store(auth_client, other_store, strict):
    WebhookChannelFactory(store=other_store, url="https://other.example.com/")

    assert auth_client.get(URL).status_code == 404


def test_staff_can_read_but_not_change(client_for, store, strict):
    staff = UserFactory()
    MembershipFactory(user=staff, store=store, role=ROLE_STAFF)
    client = client_for(make_api_key(staff))

    assert client.get(URL).status_code == 404
    assert client.put(URL, PUBLIC_BODY).status_code == 403
    assert client.post(f"{URL}/rotate-secret").status_code == 403


def test_key_without_webhook_ability_is_forbidden(client_for, user, store):
    client = client_for(make_api_key(user, abilities=["coupon"]))

    assert client.get(URL).status_code == 403
    assert client.get("/api/v2/webhook-deliveries").status_code == 403


def test_webhook_read_ability_cannot_write(client_for, user, store):
    client = client_for(make_api_key(user, abilities=["webhook:read"]))

    assert client.get(URL).status_code == 404
    assert client.put(URL, PUBLIC_BODY).status_code == 403


def test_a_new_url_starts_its_own_failure_clock(auth_client, store, receiver):
    # given a channel failing for five days
    channel_for(store, receiver.url, event_types=["order.completed"])
    long_ago = timezone.now() - timedelta(days=5, minutes=1)
    WebhookChannel.objects.filter(store=store).update(failing_since=long_ago)
    body = {"url": receiver.url, "event_types": ["order.completed"]}
    # a PUT that keeps the URL keeps the clock (else re-saving would keep a dead URL alive)
    assert auth_client.put(URL, body).status_code == 200
    assert WebhookChannel.objects.get(store=store).failing_since == long_ago

    # when the URL changes
    assert auth_client.put(URL, {**body, "url": f"{receiver.url}?v=2"}).status_code == 200

    # then the new URL's first failure does not disable it
    assert WebhookChannel.objects.get(store=store).failing_since is None
    receiver.respond = lambda request: Reply(500)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    assert delivery_send(delivery_id=delivery.pk) == "pending"
    channel = WebhookChannel.objects.get(store=store)
    assert channel.enabled is True and channel.failing_since is not None


@pytest.mark.parametrize("change", ["disable", "delete"])
def test_turning_the_channel_off_fails_tried_deliveries_and_disables_untried_ones(
    auth_client, store, receiver, change
):
    # given a delivery tried once (500, retry scheduled) and one never tried
    channel_for(store, receiver.url, event_types=["order.completed"])
    receiver.respond = lambda request: Reply(500, b"later")
    tried = WebhookDelivery.objects.get(event=record_order_completed(store, order_id=1))
    assert delivery_send(delivery_id=tried.pk) == "pending"
    untried = WebhookDelivery.objects.get(event=record_order_completed(store, order_id=2))

    # when
    if change == "disable":
        body = {"url": receiver.url, "event_types": ["order.completed"], "enabled": False}
        assert auth_client.put(URL, body).status_code == 200
    else:
        assert auth_client.delete(URL).status_code == 204

    # then a `disabled` delivery is one never sent (docs/design.md: attempts 0)
    tried.refresh_from_db()
    untried.refresh_from_db()
    assert (tried.status, tried.attempts, tried.response_status) == ("failed", 1, 500)
    assert tried.next_attempt_at is None
    assert (untried.status, untried.attempts, untried.next_attempt_at) == ("disabled", 0, None)
    assert tried.attempt_records.count() == 1
    assert delivery_send(delivery_id=tried.pk) is None
    assert delivery_send(delivery_id=untried.pk) is None
    assert len(receiver.received()) == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_first_puts_create_one_channel(store, api_key):
    # given eight clients putting the store's first channel at the same moment
    body = {"url": "http://127.0.0.1:9000/in", "event_types": ["order.completed"]}

    def put():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key}")
        return client.put(URL, body, format="json")

    # when
    outcomes = run_at_once(put, 8)
    # a 500 comes back as the exception the test client re-raised
    errors = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    responses = [outcome for outcome in outcomes if not isinstance(outcome, BaseException)]

    # then one creates it (201, with the secret) and the others replace it (200)
    assert errors == []
    assert sorted(r.status_code for r in responses) == [200] * 7 + [201]
    created = next(r for r in responses if r.status_code == 201)
    channel = WebhookChannel.objects.get(store=store)
    assert created.json()["data"]["secret"] == store_secret(channel.store)
