"""Migration 0011: each store's destination becomes one of its channels, with nothing
lost: its secrets become the store's signing secret, its subscriptions, enabled/disabled state
and failure clock stay, and its deliveries (pending ones included) stay its deliveries. Run with
Django's MigrationExecutor on rows written by the schema before it."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.utils import timezone

from tests.factories import UserFactory
from tests.migrations import migrate, migrate_to_latest
from tests.webhooks.helpers import record_order_completed
from webhooks.dispatch.sender import signing_secrets
from webhooks.models import WebhookChannel, WebhookDelivery, WebhookSigningSecret

BEFORE = [("webhooks", "0010_destination_write_records_withhold")]
AFTER = [("webhooks", "0011_channels")]


@pytest.mark.django_db(transaction=True)
def test_destinations_become_channels_with_nothing_lost(store, other_store):
    # given: one enabled destination mid-rotation with a pending and a retrying delivery, and a
    # destination disabled after 410 Gone with a delivery it never got (the schema before)
    events = [record_order_completed(store, order_id=n) for n in (1, 2)]
    missed = record_order_completed(other_store, order_id=3)
    now = timezone.now()
    grace_ends = now + timedelta(hours=3)
    staff = UserFactory(is_staff=True)
    old_apps = migrate(BEFORE)
    try:
        destination_model = old_apps.get_model("webhooks", "WebhookDestination")
        delivery_model = old_apps.get_model("webhooks", "WebhookDelivery")
        live = destination_model.objects.create(
            store_id=store.pk,
            url="https://hooks.example.com/in",
            secret="whsec_bmV3LXNlY3JldC0wMTIzNDU2Nzg5YWJjZGVmMDEyMzQ1",
            previous_secret="whsec_b2xkLXNlY3JldC0wMTIzNDU2Nzg5YWJjZGVmMDEyMzQ1",
            previous_secret_expires_at=grace_ends,
            event_types=["coupon.created", "order.completed"],
            failing_since=now,
        )
        gone = destination_model.objects.create(
            store_id=other_store.pk,
            url="https://other.example.com/in",
            secret="whsec_b3RoZXItc2VjcmV0LTAxMjM0NTY3ODlhYmNkZWYwMTIz",
            enabled=False,
            disabled_reason="gone",
            event_types=["order.completed"],
        )
        common = {"event_type": "order.completed", "created_at": now, "updated_at": now}
        pending = delivery_model.objects.create(
            store_id=store.pk,
            event_id=events[0].pk,
            destination=live,
            destination_origin="https://hooks.example.com",
            next_attempt_at=now,
            **common,
        )
        retrying = delivery_model.objects.create(
            store_id=store.pk,
            event_id=events[1].pk,
            destination=live,
            destination_origin="https://hooks.example.com",
            attempts=2,
            next_attempt_at=now + timedelta(minutes=5),
            **common,
        )
        never_sent = delivery_model.objects.create(
            store_id=other_store.pk,
            event_id=missed.pk,
            destination=gone,
            destination_origin="https://other.example.com",
            status="disabled",
            **common,
        )
        staff.user_permissions.add(Permission.objects.get(codename="change_webhookdestination"))

        # when
        migrate(AFTER)
    finally:
        migrate_to_latest()

    # then: the same rows, now channels, with the store's secret and its grace
    channel = WebhookChannel.objects.get(pk=live.pk)
    assert (channel.store_id, channel.url, channel.name) == (store.pk, live.url, None)
    assert channel.event_types == ["coupon.created", "order.completed"]
    assert channel.enabled and channel.failing_since == now
    assert signing_secrets(store_id=store.pk) == [live.secret, live.previous_secret]
    assert WebhookSigningSecret.objects.get(store=store).previous_secret_expires_at == grace_ends
    off = WebhookChannel.objects.get(pk=gone.pk)
    assert channel.uid != off.uid
    assert (off.enabled, off.disabled_reason) == (False, "gone")
    assert signing_secrets(store_id=other_store.pk) == [gone.secret]
    # every delivery as it was, on its channel
    states = {
        d.pk: (d.channel_id, d.status, d.attempts)
        for d in WebhookDelivery.objects.filter(pk__in=[pending.pk, retrying.pk, never_sent.pk])
    }
    assert states == {
        pending.pk: (live.pk, "pending", 0),
        retrying.pk: (live.pk, "pending", 2),
        never_sent.pk: (gone.pk, "disabled", 0),
    }
    # staff who could change destinations can change channels
    staff.refresh_from_db()
    assert staff.has_perm("webhooks.change_webhookchannel")
