from datetime import timedelta

import pytest
from django.utils import timezone

from events.models import Event
from events.services import events_prune
from tests.admin_users import cookies_carry, post_action, sessions_carry, staff_client_with
from tests.factories import MembershipFactory, events_age
from tests.webhooks.helpers import Reply, channel_for, record_order_completed, store_secret
from webhooks.dispatch.attempts import delivery_send
from webhooks.models import WebhookChannel, WebhookDelivery, WebhookDeliveryAttempt


def test_sweeper_is_scheduled_by_beat(settings):
    from config.celery import app
    from webhooks.tasks import deliveries_sweep_task, delivery_send_task

    entry = settings.CELERY_BEAT_SCHEDULE["webhooks-deliveries-sweep"]
    assert entry["task"] == "webhooks.deliveries_sweep" == deliveries_sweep_task.name
    assert entry["schedule"] == settings.WEBHOOKS_SWEEP_INTERVAL_SECONDS
    assert {"webhooks.deliveries_sweep", "webhooks.delivery_send"} <= set(app.tasks)
    assert delivery_send_task.name == "webhooks.delivery_send"


def test_by_default_a_failing_delivery_is_retried_over_a_day_then_failed(store, receiver):
    # the designed schedule (docs/design.md "Webhooks"): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h
    channel_for(store, receiver.url)
    receiver.respond = lambda request: Reply(500)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    waits = []
    while (before := timezone.now()) and delivery_send(delivery_id=delivery.pk) == "pending":
        delivery.refresh_from_db()
        waits.append((delivery.next_attempt_at - before).total_seconds())
        WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())

    designed = [5, 300, 1800, 7200, 18000, 36000, 36000]
    assert len(waits) == len(designed), waits
    assert all(0 <= wait - planned <= 2 for wait, planned in zip(waits, designed)), waits
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", 8)


def test_deliveries_and_attempts_follow_their_event_out_of_retention(store, receiver):
    channel_for(store, receiver.url)
    old = record_order_completed(store, order_id=1)
    recent = record_order_completed(store, order_id=2)
    delivery_send(delivery_id=WebhookDelivery.objects.get(event=old).pk)
    events_age(Event.objects.filter(pk=old.pk), timezone.now() - timedelta(days=31))

    events_prune()

    assert list(WebhookDelivery.objects.values_list("event_id", flat=True)) == [recent.id]
    assert not WebhookDeliveryAttempt.objects.exists()


def test_admin_lists_deliveries_with_their_attempts(admin_client, store, receiver):
    channel_for(store, receiver.url)
    receiver.respond = lambda request: Reply(500, b"nope")
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    delivery_send(delivery_id=delivery.pk)

    listing = admin_client.get("/admin/webhooks/webhookdelivery/")
    detail = admin_client.get(f"/admin/webhooks/webhookdelivery/{delivery.pk}/change/")

    assert listing.status_code == 200 and str(delivery.pk) in listing.content.decode()
    assert detail.status_code == 200
    assert "HTTP 500" in detail.content.decode() and "nope" in detail.content.decode()


def test_admin_replay_action_creates_a_new_pending_delivery(admin_client, store, receiver):
    channel_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    response = admin_client.post(
        "/admin/webhooks/webhookdelivery/",
        {"action": "replay", "_selected_action": [str(delivery.pk)]},
    )

    assert response.status_code == 302
    replays = WebhookDelivery.objects.exclude(pk=delivery.pk)
    assert [(r.event_id, r.status, r.attempts) for r in replays] == [
        (delivery.event_id, "pending", 0)
    ]


def test_admin_disable_enable_and_rotate(admin_client, store, receiver):
    channel = channel_for(store, receiver.url)
    pending = WebhookDelivery.objects.get(event=record_order_completed(store))
    secret = store_secret(channel.store)
    url = "/admin/webhooks/webhookchannel/"

    admin_client.post(url, {"action": "disable", "_selected_action": [channel.pk]})
    channel.refresh_from_db()
    pending.refresh_from_db()
    assert channel.enabled is False and channel.disabled_reason == "user"
    assert pending.status == "disabled"

    admin_client.post(url, {"action": "enable", "_selected_action": [channel.pk]})
    channel.refresh_from_db()
    assert channel.enabled is True and channel.disabled_reason == ""

    response = admin_client.post(
        url, {"action": "rotate_secret", "_selected_action": [channel.pk]}, follow=True
    )
    channel.refresh_from_db()
    assert (
        store_secret(channel.store) != secret
        and store_secret(channel.store, previous=True) == secret
    )
    assert store_secret(channel.store) in response.content.decode()
    assert WebhookChannel.objects.count() == 1


CHANNELS = "/admin/webhooks/webhookchannel/"
DELIVERIES = "/admin/webhooks/webhookdelivery/"


def channel_state(channel):
    channel.refresh_from_db()
    return (channel.enabled, channel.disabled_reason, store_secret(channel.store))


@pytest.mark.parametrize(
    ("action", "enabled"),
    [("enable", False), ("disable", True), ("rotate_secret", True)],
)
def test_view_only_staff_cannot_run_channel_actions(store, receiver, action, enabled):
    # given
    channel = channel_for(store, receiver.url, enabled=enabled)
    before = channel_state(channel)
    viewer = staff_client_with("webhooks.view_webhookchannel")
    assert viewer.get(CHANNELS).status_code == 200
    # when
    response = post_action(viewer, CHANNELS, action, [channel.pk])
    # then
    assert channel_state(channel) == before
    assert store_secret(channel.store) not in response.content.decode()


@pytest.mark.parametrize(
    ("action", "enabled", "changed"),
    [
        ("enable", False, lambda d: d.enabled),
        ("disable", True, lambda d: not d.enabled),
        ("rotate_secret", True, lambda d: store_secret(d.store, previous=True) != ""),
    ],
)
def test_staff_with_the_change_permission_run_channel_actions(
    store, receiver, action, enabled, changed
):
    channel = channel_for(store, receiver.url, enabled=enabled)
    editor = staff_client_with("webhooks.view_webhookchannel", "webhooks.change_webhookchannel")

    post_action(editor, CHANNELS, action, [channel.pk])

    channel.refresh_from_db()
    assert changed(channel)


def test_a_rotated_secret_is_shown_once_uncached_and_never_in_a_cookie(store, receiver):
    # given
    channel = channel_for(store, receiver.url)
    other = channel_for(MembershipFactory().store, receiver.url)
    editor = staff_client_with("webhooks.view_webhookchannel", "webhooks.change_webhookchannel")
    # when
    response = post_action(editor, CHANNELS, "rotate_secret", [channel.pk, other.pk])
    # then
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    page = response.content.decode()
    for rotated in (channel, other):
        rotated.refresh_from_db()
        assert (
            store_secret(rotated.store).startswith("whsec_") and store_secret(rotated.store) in page
        )
        assert rotated.store.slug in page
        assert not cookies_carry(response, editor, store_secret(rotated.store))
        assert not sessions_carry(store_secret(rotated.store))
        assert store_secret(rotated.store) not in editor.get(CHANNELS).content.decode()


def test_view_only_staff_cannot_replay_a_delivery(store, receiver):
    channel_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    viewer = staff_client_with("webhooks.view_webhookdelivery")
    assert viewer.get(DELIVERIES).status_code == 200

    post_action(viewer, DELIVERIES, "replay", [delivery.pk])

    assert list(WebhookDelivery.objects.values_list("pk", flat=True)) == [delivery.pk]


def test_staff_who_may_add_deliveries_replay_one(store, receiver):
    channel_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    replayer = staff_client_with("webhooks.view_webhookdelivery", "webhooks.add_webhookdelivery")

    post_action(replayer, DELIVERIES, "replay", [delivery.pk])

    replays = WebhookDelivery.objects.exclude(pk=delivery.pk)
    assert [(r.event_id, r.status) for r in replays] == [(delivery.event_id, "pending")]
