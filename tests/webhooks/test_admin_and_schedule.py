from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from events.models import Event
from events.services import events_prune
from tests.factories import UserFactory
from tests.webhooks.conftest import Reply, destination_for, record_order_completed
from webhooks.attempts import delivery_send
from webhooks.models import WebhookDelivery, WebhookDeliveryAttempt, WebhookDestination


@pytest.fixture
def staff_client(db):
    admin = UserFactory(is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(admin)
    return client


def test_sweeper_is_scheduled_by_beat(settings):
    from config.celery import app
    from webhooks.tasks import deliveries_sweep_task, delivery_send_task

    entry = settings.CELERY_BEAT_SCHEDULE["webhooks-deliveries-sweep"]
    assert entry["task"] == "webhooks.deliveries_sweep" == deliveries_sweep_task.name
    assert entry["schedule"] == settings.WEBHOOKS_SWEEP_INTERVAL_SECONDS
    assert {"webhooks.deliveries_sweep", "webhooks.delivery_send"} <= set(app.tasks)
    assert delivery_send_task.name == "webhooks.delivery_send"


def test_default_retry_schedule_is_the_designed_one(settings):
    from config.settings import webhooks as webhook_settings

    assert webhook_settings.WEBHOOKS_RETRY_SCHEDULE_SECONDS == (
        5,
        300,
        1800,
        7200,
        18000,
        36000,
        36000,
    )
    assert webhook_settings.WEBHOOKS_TIMEOUT_SECONDS == 10
    assert webhook_settings.WEBHOOKS_DISABLE_AFTER_FAILING.total_seconds() == 5 * 24 * 3600


def test_deliveries_and_attempts_follow_their_event_out_of_retention(store, receiver):
    destination_for(store, receiver.url)
    old = record_order_completed(store, order_id=1)
    recent = record_order_completed(store, order_id=2)
    delivery_send(delivery_id=WebhookDelivery.objects.get(event=old).pk)
    Event.objects.filter(pk=old.pk).update(occurred_at=timezone.now() - timedelta(days=31))

    events_prune()

    assert list(WebhookDelivery.objects.values_list("event_id", flat=True)) == [recent.id]
    assert not WebhookDeliveryAttempt.objects.exists()


def test_admin_lists_deliveries_with_their_attempts(staff_client, store, receiver):
    destination_for(store, receiver.url)
    receiver.respond = lambda request: Reply(500, b"nope")
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    delivery_send(delivery_id=delivery.pk)

    listing = staff_client.get("/admin/webhooks/webhookdelivery/")
    detail = staff_client.get(f"/admin/webhooks/webhookdelivery/{delivery.pk}/change/")

    assert listing.status_code == 200 and str(delivery.pk) in listing.content.decode()
    assert detail.status_code == 200
    assert "HTTP 500" in detail.content.decode() and "nope" in detail.content.decode()


def test_admin_replay_action_creates_a_new_pending_delivery(staff_client, store, receiver):
    destination_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    response = staff_client.post(
        "/admin/webhooks/webhookdelivery/",
        {"action": "replay", "_selected_action": [str(delivery.pk)]},
    )

    assert response.status_code == 302
    replays = WebhookDelivery.objects.exclude(pk=delivery.pk)
    assert [(r.event_id, r.status, r.attempts) for r in replays] == [
        (delivery.event_id, "pending", 0)
    ]


def test_admin_disable_enable_and_rotate(staff_client, store, receiver):
    destination = destination_for(store, receiver.url)
    pending = WebhookDelivery.objects.get(event=record_order_completed(store))
    secret = destination.secret
    url = "/admin/webhooks/webhookdestination/"

    staff_client.post(url, {"action": "disable", "_selected_action": [destination.pk]})
    destination.refresh_from_db()
    pending.refresh_from_db()
    assert destination.enabled is False and destination.disabled_reason == "user"
    assert pending.status == "disabled"

    staff_client.post(url, {"action": "enable", "_selected_action": [destination.pk]})
    destination.refresh_from_db()
    assert destination.enabled is True and destination.disabled_reason == ""

    response = staff_client.post(
        url, {"action": "rotate_secret", "_selected_action": [destination.pk]}, follow=True
    )
    destination.refresh_from_db()
    assert destination.secret != secret and destination.previous_secret == secret
    assert destination.secret in response.content.decode()
    assert WebhookDestination.objects.count() == 1
