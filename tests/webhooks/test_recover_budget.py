"""Recover has its own budget per store, an event is missed by a channel once, and a store's
pending deliveries have a ceiling (docs/decisions/hardening.md, Hardening V, 5)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.factories import MembershipFactory, WebhookChannelFactory, make_api_key
from tests.webhooks.helpers import record_order_completed
from webhooks.models import WebhookChannel, WebhookDelivery, WebhookRecovery

pytestmark = pytest.mark.django_db

URL = "/api/v2/webhook-channels"


def recover(client, channel, **window):
    body = {"since": (timezone.now() - timedelta(hours=1)).isoformat(), **window}
    return client.post(f"{URL}/{channel.uid}/recover", body, format="json")


def enabled_set(client, channel, enabled: bool):
    response = client.patch(f"{URL}/{channel.uid}", {"enabled": enabled}, format="json")
    assert response.status_code == 200, response.json()


def missed_while_off(client, store, count: int) -> WebhookChannel:
    """A channel that was off while `count` events were recorded, then turned back on."""
    channel = WebhookChannelFactory(store=store, enabled=False)
    for n in range(count):
        record_order_completed(store, order_id=n)
    enabled_set(client, channel, True)
    return channel


def assert_rate_limited(response, *, at_most: int, mentions: str):
    assert response.status_code == 429, response.json()
    body = response.json()
    assert (body["code"], body["status"]) == ("rate_limit_exceeded", 429)
    assert mentions in body["message"]
    assert 1 <= int(response["Retry-After"]) <= at_most


def test_recover_calls_per_store_are_budgeted(auth_client, store, settings):
    # given: two calls per hour
    settings.WEBHOOKS_RECOVER_CALLS_LIMIT = 2
    channel = missed_while_off(auth_client, store, 1)
    # when
    statuses = [recover(auth_client, channel).status_code for _ in range(2)]
    third = recover(auth_client, channel)
    # then: the third waits until the first call leaves the hour
    assert statuses == [202, 202]
    assert_rate_limited(third, at_most=3600, mentions="recover calls")
    assert int(third["Retry-After"]) > 3500


def test_deliveries_queued_by_recover_per_store_are_budgeted(auth_client, store, settings):
    # given: three deliveries per hour, and five missed events
    settings.WEBHOOKS_RECOVER_QUEUED_LIMIT = 3
    channel = missed_while_off(auth_client, store, 5)
    # when
    first = recover(auth_client, channel)
    second = recover(auth_client, channel, since=first.json()["data"]["until"])
    # then: the first queued what the budget allowed and said where it stopped
    assert first.status_code == 202 and first.json()["data"]["queued"] == 3
    assert WebhookDelivery.objects.filter(channel=channel, recovered=True).count() == 3
    assert_rate_limited(second, at_most=3600, mentions="deliveries queued by recover")


def test_disable_and_enable_do_not_make_an_event_missed_twice(auth_client, store):
    # given: a recover of the events missed while the channel was off
    channel = missed_while_off(auth_client, store, 3)
    first = recover(auth_client, channel)
    # when: turned off (its recovered deliveries are never sent) and on again
    enabled_set(auth_client, channel, False)
    enabled_set(auth_client, channel, True)
    again = recover(auth_client, channel)
    # then
    assert first.json()["data"]["queued"] == 3
    assert again.status_code == 202 and again.json()["data"]["queued"] == 0
    assert WebhookDelivery.objects.filter(channel=channel).count() == 3


def test_recover_and_replay_wait_while_the_store_is_at_its_pending_ceiling(
    auth_client, store, settings
):
    # given: a store whose pending deliveries reach its ceiling
    settings.WEBHOOKS_STORE_PENDING_MAX = 2
    channel = missed_while_off(auth_client, store, 2)
    busy = WebhookChannelFactory(store=store, url="https://hooks.example.com/busy")
    for n in (10, 11):
        record_order_completed(store, order_id=n)
    delivered = WebhookDelivery.objects.filter(channel=busy).first()
    # when
    recovered = recover(auth_client, channel)
    replayed = auth_client.post(f"/api/v2/webhook-deliveries/{delivered.pk}/replay", {})
    # then
    assert_rate_limited(recovered, at_most=600, mentions="pending deliveries")
    assert_rate_limited(replayed, at_most=600, mentions="pending deliveries")
    assert WebhookDelivery.objects.filter(store=store).count() == 2


def test_recover_queues_no_more_than_the_store_s_pending_room(auth_client, store, settings):
    settings.WEBHOOKS_STORE_PENDING_MAX = 4
    channel = missed_while_off(auth_client, store, 6)

    response = recover(auth_client, channel)

    assert response.status_code == 202 and response.json()["data"]["queued"] == 4
    assert WebhookDelivery.objects.filter(store=store, status="pending").count() == 4


def test_the_admin_s_recover_action_spends_the_same_budget(admin_client, store, settings):
    settings.WEBHOOKS_RECOVER_CALLS_LIMIT = 1
    channel = WebhookChannelFactory(store=store)
    action = {"action": "recover", "_selected_action": [channel.pk]}

    first = admin_client.post("/admin/webhooks/webhookchannel/", action, follow=True)
    second = admin_client.post("/admin/webhooks/webhookchannel/", action, follow=True)

    assert "0 deliveries queued" in first.content.decode()
    refused = second.content.decode()
    assert "At most 1 recover calls per store" in refused and "retry after" in refused


def test_a_call_past_the_window_counts_no_more_and_its_row_goes(auth_client, store, settings):
    # given: one call a window, spent an hour ago
    settings.WEBHOOKS_RECOVER_CALLS_LIMIT = 1
    channel = missed_while_off(auth_client, store, 1)
    assert recover(auth_client, channel).status_code == 202
    WebhookRecovery.objects.update(created_at=timezone.now() - timedelta(hours=1, seconds=1))
    # when
    again = recover(auth_client, channel)
    # then
    assert again.status_code == 202
    assert WebhookRecovery.objects.filter(store=store).count() == 1


def test_a_noisy_store_at_its_bounds_costs_another_store_nothing(
    auth_client, store, client_for, settings
):
    # given: a store that spent its recover calls and sits at its pending ceiling
    settings.WEBHOOKS_RECOVER_CALLS_LIMIT = 1
    settings.WEBHOOKS_STORE_PENDING_MAX = 2
    noisy = missed_while_off(auth_client, store, 2)
    assert recover(auth_client, noisy).status_code == 202
    record_order_completed(store, order_id=99)
    assert recover(auth_client, noisy).status_code == 429
    # and a quiet store of another user, with an event its channel missed
    quiet_owner = MembershipFactory().user
    quiet_store = quiet_owner.memberships.get().store
    quiet_client = client_for(make_api_key(quiet_owner))
    quiet = missed_while_off(quiet_client, quiet_store, 1)
    # when
    event = record_order_completed(quiet_store, order_id=1)
    recovered = recover(quiet_client, quiet)
    # then: the quiet store's event has its delivery and its recover its own budget
    assert WebhookDelivery.objects.filter(event=event, channel=quiet).count() == 1
    assert recovered.status_code == 202 and recovered.json()["data"]["queued"] == 1
    assert not WebhookDelivery.objects.filter(store=store, event__subject_id="99").exists()
