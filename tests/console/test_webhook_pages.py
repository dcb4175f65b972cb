"""Webhooks, deliveries and events pages through Django's test client: the API's rules and
budgets, role rules (a staff member reads and is refused every write with 403), each write seen
through the API afterwards, and a bounded number of queries per page."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from standardwebhooks import Webhook

from tests.console.conftest import post
from tests.factories import WebhookChannelFactory
from tests.webhooks.helpers import Reply, record_order_completed
from webhooks.models import WebhookChannel, WebhookDelivery, WebhookSigningSecret

pytestmark = pytest.mark.django_db

SECRET = re.compile(r'<code id="new-secret">([^<]+)</code>')


def delivery_links(page: str) -> int:
    return len(re.findall(r'href="/console/deliveries/[0-9a-f-]{36}/"', page))


def add_channel(console, url, types=("order.completed",), name="Fulfilment"):
    return post(
        console,
        "/console/webhooks/",
        {"name": name, "url": url, "allowed_notifications": list(types)},
    )


def test_add_a_channel_seen_through_the_api(console, store, auth_client):
    response = add_channel(console, "https://93.184.215.14/hooks")
    assert response.status_code == 302
    channel = WebhookChannel.objects.get(store=store)
    assert response["Location"] == f"/console/webhooks/{channel.uid}/"
    assert "not set — <a" in console.get(response["Location"]).content.decode()
    listed = auth_client.get("/api/v2/webhook-channels").json()["data"]
    assert [(c["name"], c["url"]) for c in listed] == [
        ("Fulfilment", "https://93.184.215.14/hooks")
    ]


def test_channel_form_errors_are_the_apis(console, store, settings):
    page = console.get("/console/webhooks/").content.decode()
    assert "No channels yet — add one below" in page

    response = add_channel(console, "ftp://example.com/x", types=[])
    assert response.status_code == 422
    body = response.content.decode()
    assert 'id="url-error"' in body and 'id="allowed_notifications-error"' in body

    # the store's channel limit (WEBHOOKS_STORE_CHANNELS_MAX), at the top of the form
    settings.WEBHOOKS_STORE_CHANNELS_MAX = 1
    assert add_channel(console, "https://93.184.215.14/a").status_code == 302
    response = add_channel(console, "https://93.184.215.14/b")
    assert response.status_code == 422
    assert "at most 1 webhook channels" in response.content.decode()


def test_staff_reads_and_every_write_is_403(staff_console, store):
    channel = WebhookChannelFactory(store=store)
    channel_page = f"/console/webhooks/{channel.uid}/"
    page = staff_console.get(channel_page).content.decode()
    # the origin only, and no form it may not send
    assert "https://hooks.example.com" in page and "/storefront" not in page
    assert 'id="save-channel"' not in page and 'id="send-test"' not in page
    assert 'id="add-channel"' not in staff_console.get("/console/webhooks/").content.decode()

    writes = [
        (
            "/console/webhooks/",
            {"url": "https://93.184.215.14/x", "allowed_notifications": "order.completed"},
        ),
        (
            channel_page,
            {"url": "https://93.184.215.14/x", "allowed_notifications": "order.completed"},
        ),
        (f"/console/webhooks/{channel.uid}/enabled", {"enabled": "false"}),
        (f"/console/webhooks/{channel.uid}/test", {"event": "order.completed"}),
        (f"/console/webhooks/{channel.uid}/recover", {"since": "2026-11-29T00:00"}),
        (f"/console/webhooks/{channel.uid}/delete", {}),
        ("/console/webhooks/secret", {"generate": "1"}),
    ]
    for path, data in writes:
        response = post(staff_console, path, data)
        assert response.status_code == 403, path
        assert "does not allow &#x27;webhook:write&#x27;" in response.content.decode()
    channel.refresh_from_db()
    assert channel.enabled and WebhookChannel.objects.count() == 1


def test_edit_disable_enable_and_delete(console, store, auth_client):
    channel = WebhookChannelFactory(store=store)
    page = f"/console/webhooks/{channel.uid}/"
    assert "<dd>configured</dd>" in console.get(page).content.decode()
    response = post(
        console,
        page,
        {"name": "Renamed", "url": channel.url, "allowed_notifications": ["coupon.created"]},
    )
    assert response.status_code == 302
    seen = auth_client.get(f"/api/v2/webhook-channels/{channel.uid}").json()["data"]
    assert (seen["name"], seen["allowed_notifications"]) == ("Renamed", ["coupon.created"])

    post(console, f"{page}enabled", {"enabled": "false"})
    seen = auth_client.get(f"/api/v2/webhook-channels/{channel.uid}").json()["data"]
    assert (seen["enabled"], seen["disabled_reason"]) == (False, "user")
    assert "disabled by a user" in console.get(page).content.decode()
    post(console, f"{page}enabled", {"enabled": "true"})
    assert auth_client.get(f"/api/v2/webhook-channels/{channel.uid}").json()["data"]["enabled"]

    confirm = console.get(f"{page}delete")
    assert confirm.status_code == 200 and "cannot be undone" in confirm.content.decode()
    assert post(console, f"{page}delete").status_code == 302
    assert auth_client.get(f"/api/v2/webhook-channels/{channel.uid}").status_code == 404


def test_another_stores_channel_is_not_found(console, other_store):
    channel = WebhookChannelFactory(store=other_store)
    assert console.get(f"/console/webhooks/{channel.uid}/").status_code == 404
    assert console.get("/console/webhooks/not-a-uuid/").status_code == 404


def test_signing_secret_generated_is_shown_once(console, store):
    page = console.get("/console/webhooks/secret").content.decode()
    assert "No signing secret yet" in page
    response = post(console, "/console/webhooks/secret", {"generate": "1"})
    assert response.status_code == 302
    shown = SECRET.search(console.get("/console/webhooks/secret").content.decode()).group(1)
    assert shown == WebhookSigningSecret.objects.get(store=store).secret
    again = console.get("/console/webhooks/secret").content.decode()
    assert shown not in again and "Last set" in again

    # set one: the previous keeps signing for its grace
    own = "whsec_" + "c2VjcmV0LWZvci10ZXN0cy0wMTIzNDU2Nzg5YWJjZA=="
    assert post(console, "/console/webhooks/secret", {"signing_secret": own}).status_code == 302
    row = WebhookSigningSecret.objects.get(store=store)
    assert (row.secret, row.previous_secret) == (own, shown)
    assert "Previous secret signs until" in console.get("/console/webhooks/secret").content.decode()
    response = post(console, "/console/webhooks/secret", {"signing_secret": "short"})
    assert response.status_code == 422
    assert 'id="signing_secret-error"' in response.content.decode()


def test_test_send_reaches_a_real_receiver_signed(console, store, receiver):
    channel = WebhookChannelFactory(store=store, url=receiver.url)
    response = post(console, f"/console/webhooks/{channel.uid}/test", {"event": "order.completed"})
    assert response.status_code == 302
    [request] = receiver.received()
    secret = WebhookSigningSecret.objects.get(store=store).secret
    assert Webhook(secret).verify(request.body, request.headers)["type"] == "order.completed"
    assert "delivered" in console.get(response["Location"]).content.decode()

    # the receiver's refusal, said next to the form, a 422
    receiver.respond = lambda request: Reply(500)
    response = post(console, f"/console/webhooks/{channel.uid}/test", {"event": "order.completed"})
    assert response.status_code == 422
    assert "the receiver answered HTTP 500" in response.content.decode()


def test_test_send_budget_is_the_apis(console, store, receiver, settings):
    """Hardening V: one test send per store in flight (429), a per-process cap (503)."""
    channel = WebhookChannelFactory(store=store, url=receiver.url)
    settings.WEBHOOKS_OUTBOUND_CALLS_PER_PROCESS = 0
    response = post(console, f"/console/webhooks/{channel.uid}/test", {"event": "order.completed"})
    assert response.status_code == 503
    assert int(response["Retry-After"]) >= 1
    settings.WEBHOOKS_OUTBOUND_CALLS_PER_PROCESS = 4
    from django.core.cache import cache

    from webhooks.dispatch.outbound import _store_key

    cache.set(_store_key("test_send", store.pk), f"other {timezone.now().timestamp() + 5}", 10)
    response = post(console, f"/console/webhooks/{channel.uid}/test", {"event": "order.completed"})
    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1
    assert receiver.received() == []


def test_recover_queues_missed_events(console, store):
    channel = WebhookChannelFactory(store=store, enabled=False, disabled_reason="gone")
    record_order_completed(store)
    since = (timezone.now() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
    page = f"/console/webhooks/{channel.uid}/"
    # a disabled channel: 409, enable it first
    response = post(console, f"{page}recover", {"since": since})
    assert response.status_code == 409
    post(console, f"{page}enabled", {"enabled": "true"})
    response = post(console, f"{page}recover", {"since": since})
    assert response.status_code == 302
    assert "Queued 1 missed event" in console.get(page).content.decode()
    assert WebhookDelivery.objects.filter(channel=channel, recovered=True).count() == 1
    response = post(console, f"{page}recover", {"since": "2000-01-01T00:00"})
    assert response.status_code == 422
    assert 'id="since-error"' in response.content.decode()


def test_deliveries_filter_page_and_replay(console, store, auth_client, settings):
    first = WebhookChannelFactory(store=store, name="First")
    second = WebhookChannelFactory(store=store, name="Second", url="https://93.184.215.14/2")
    for n in range(3):
        record_order_completed(store, order_id=n)
    assert WebhookDelivery.objects.count() == 6

    assert delivery_links(console.get("/console/deliveries/").content.decode()) == 6
    page = console.get(f"/console/deliveries/?channel={second.uid}").content.decode()
    assert delivery_links(page) == 3
    page = console.get("/console/deliveries/?status=succeeded").content.decode()
    assert "No deliveries match these filters" in page
    assert console.get("/console/deliveries/?status=nope").status_code == 422

    delivery = WebhookDelivery.objects.filter(channel=first).first()
    response = post(console, f"/console/deliveries/{delivery.pk}/")
    assert response.status_code == 302
    replayed = WebhookDelivery.objects.get(replay_of=delivery.pk)
    assert response["Location"] == f"/console/deliveries/{replayed.pk}/"
    api = auth_client.get(f"/api/v2/webhook-deliveries/{replayed.pk}").json()["data"]
    assert api["status"] == "pending"

    # the API's replay cap
    settings.WEBHOOKS_REPLAY_LIMIT = 1
    response = post(console, f"/console/deliveries/{delivery.pk}/")
    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1


def test_delivery_attempts_never_show_a_url_path(console, store):
    WebhookChannelFactory(store=store, url="https://93.184.215.14/secret-path")
    record_order_completed(store)
    delivery = WebhookDelivery.objects.get()
    delivery.attempt_records.create(
        delivery_event_occurred_at=delivery.event_occurred_at,
        number=1,
        origin="https://93.184.215.14",
        duration_ms=12,
        error="connect timeout: https://93.184.215.14/secret-path",
    )
    page = console.get(f"/console/deliveries/{delivery.pk}/").content.decode()
    assert "connect timeout" in page and "12 ms" in page
    assert "secret-path" not in page


def test_events_newest_first_filtered_with_the_wildcard(console, store):
    orders = [record_order_completed(store, order_id=n) for n in range(3)]
    page = console.get("/console/events/").content.decode()
    positions = [page.index(event.id) for event in reversed(orders)]
    assert positions == sorted(positions)
    assert (
        console.get("/console/events/?type=order.*")
        .content.decode()
        .count('href="/console/events/evt_')
        == 3
    )
    assert "No events match" in console.get("/console/events/?type=coupon.*").content.decode()
    assert (
        "No events match"
        not in console.get("/console/events/?subject_type=order&subject_id=1").content.decode()
    )
    assert console.get("/console/events/?type=a*b").status_code == 422

    detail = console.get(f"/console/events/{orders[0].id}/").content.decode()
    assert "&quot;total_cents&quot;: 1250" in detail


@pytest.mark.parametrize(
    "path",
    [
        "/console/",
        "/console/keys/",
        "/console/webhooks/",
        "/console/deliveries/",
        "/console/events/",
    ],
)
def test_lists_make_a_bounded_number_of_queries(
    console, user, store, path, django_assert_max_num_queries
):
    from tests.factories import MembershipFactory, make_api_key

    made = iter(range(100))

    def grow(n):
        for _, i in zip(range(n), made, strict=False):
            MembershipFactory(user=user)
            make_api_key(user, current_store=store)
            WebhookChannelFactory(store=store, url=f"https://93.184.215.14/c{i}")
            record_order_completed(store, order_id=i)

    grow(2)
    console.get(path)
    with django_assert_max_num_queries(12) as few:
        assert console.get(path).status_code == 200
    grow(8)
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert console.get(path).status_code == 200


def test_long_lists_page_by_position(console, store):
    WebhookChannelFactory(store=store)
    events = [record_order_completed(store, order_id=n) for n in range(27)]
    first = console.get("/console/events/?type=order.*").content.decode()
    assert first.count('href="/console/events/evt_') == 25
    older = re.search(r'href="\?([^"]+)">Older events', first).group(1).replace("&amp;", "&")
    second = console.get(f"/console/events/?{older}").content.decode()
    assert {events[0].id, events[1].id} == set(re.findall(r"/console/events/(evt_\w+)/", second))

    first = console.get("/console/deliveries/").content.decode()
    assert delivery_links(first) == 25
    older = re.search(r'href="\?([^"]+)">Older deliveries', first).group(1).replace("&amp;", "&")
    assert delivery_links(console.get(f"/console/deliveries/?{older}").content.decode()) == 2
