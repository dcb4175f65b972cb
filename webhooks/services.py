"""Writes of the webhooks area: destinations, and deliveries from creation to a final state.

Delivery lifecycle (docs/design.md "Webhooks"): created `pending` in the event's transaction (or
`disabled`, never sent, when the destination is disabled) -> claimed with a lease by one worker
-> attempt sent -> `succeeded` on a 2xx, else `pending` again with `next_attempt_at` on the
retry schedule, then `failed` after the last retry. New deliveries are sent by a drain of their
destination, queued on commit; a retry is queued as its own send task; the beat sweeper queues
a drain of each destination with a due delivery whose message was lost. Every send holds one
of its destination's few send slots, one of its account's and, while the destination fails, one
of the failing destinations' share (webhooks/attempts.py), so no store, no account and no set of
failing receivers fills the workers. Queueing the tasks and the sweeper are
webhooks/queueing.py's.
"""

import base64
import logging
import secrets as secrets_module
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.api.errors import NotFound, RateLimited, ValidationFailed
from stores.models import Store
from webhooks.addresses import url_origin
from webhooks.models import WebhookChannel, WebhookDelivery, WebhookSendSlot, WebhookSigningSecret
from webhooks.queueing import drain_request_on_commit
from webhooks.selectors import delivery_get, destination_get

logger = logging.getLogger(__name__)

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32


def secret_new() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets_module.token_bytes(SECRET_BYTES)).decode()


# --- destinations -------------------------------------------------------------------------


def destination_put(
    *, store, url: str, event_types: list[str], enabled: bool = True
) -> tuple[WebhookChannel, bool]:
    """Creates or replaces the store's destination; returns (destination, created).

    `url` and `event_types` as webhooks.serializers.WebhookDestinationPutSerializer validates
    them (the SSRF check of the URL, registered types sorted without duplicates).
    """
    now = timezone.now()
    with transaction.atomic():
        # Serialises the store's PUTs: with no destination yet, locking it would lock nothing
        # and two first PUTs would both insert. NO KEY: rows referencing the store still insert.
        Store.objects.select_for_update(no_key=True).only("id").get(pk=store.pk)
        destination = (
            WebhookChannel.objects.select_for_update().filter(store=store).order_by("id").first()
        )
        created = destination is None
        if created:
            destination = WebhookChannel(store=store, created_at=now)
            # The alias shows the secret it creates the destination with (201): a new one,
            # not one set through the channels, which is never shown.
            signing_secret_set(store=store, secret=secret_new())
        elif (enabled and not destination.enabled) or url != destination.url:
            # A new URL starts its own failure clock; so does a re-enabled destination.
            destination.failing_since = None
        destination.url = url
        destination.event_types = event_types
        destination.enabled = enabled
        destination.disabled_reason = "" if enabled else WebhookChannel.DISABLED_BY_USER
        destination.updated_at = now
        destination.save()
        if not enabled:
            _pending_deliveries_disable(destination_id=destination.pk, now=now)
    return destination, created


def destination_enabled_set(*, destination: WebhookChannel, enabled: bool, reason: str = ""):
    now = timezone.now()
    fields = {"enabled": enabled, "updated_at": now}
    if enabled:
        fields |= {"disabled_reason": "", "failing_since": None}
    else:
        fields["disabled_reason"] = reason or WebhookChannel.DISABLED_BY_USER
    with transaction.atomic():
        WebhookChannel.objects.filter(pk=destination.pk).update(**fields)
        if not enabled:
            _pending_deliveries_disable(destination_id=destination.pk, now=now)
    for name, value in fields.items():
        setattr(destination, name, value)
    return destination


def _pending_deliveries_disable(*, destination_id, now) -> None:
    """Deliveries still waiting for a disabled or removed destination will never be sent:
    `disabled` if never tried (docs/design.md: attempts 0), `failed` if already tried.

    Leased ones (an attempt in flight, or a worker that died) are left to their attempt's
    outcome or to the next claim, which record that attempt and then settle them the same way.
    """
    waiting = WebhookDelivery.objects.filter(
        destination_id=destination_id,
        status=WebhookDelivery.STATUS_PENDING,
        lease_until__isnull=True,
    )
    final = {"next_attempt_at": None, "enqueued_at": None, "updated_at": now}
    waiting.filter(attempts=0).update(status=WebhookDelivery.STATUS_DISABLED, **final)
    waiting.filter(attempts__gt=0).update(status=WebhookDelivery.STATUS_FAILED, **final)


def destination_delete(*, store) -> None:
    with transaction.atomic():
        destination = destination_get(store=store)
        _pending_deliveries_disable(destination_id=destination.pk, now=timezone.now())
        # Its send slots (a send still holding one just finds nothing to give back).
        WebhookSendSlot.objects.filter(
            scope=WebhookSendSlot.SCOPE_DESTINATION, owner=destination.pk
        ).delete()
        destination.delete()


def signing_secret_set(*, store, secret: str) -> WebhookSigningSecret:
    """Sets the store-wide signing secret of its channels; the previous one keeps signing, as a
    second signature, for WEBHOOKS_PREVIOUS_SECRET_TTL (24 h)."""
    now = timezone.now()
    with transaction.atomic():
        current = WebhookSigningSecret.objects.select_for_update().filter(store=store).first()
        if current is None:
            return WebhookSigningSecret.objects.create(store=store, secret=secret, updated_at=now)
        if current.secret != secret:
            current.previous_secret = current.secret
            current.previous_secret_expires_at = now + settings.WEBHOOKS_PREVIOUS_SECRET_TTL
            current.secret = secret
        current.updated_at = now
        current.save()
    return current


def destination_secret_rotate(*, store) -> WebhookSigningSecret:
    """A new server-generated store secret (the destination alias and the admin's rotation);
    the previous one keeps signing for WEBHOOKS_PREVIOUS_SECRET_TTL."""
    if not WebhookChannel.objects.filter(store=store).exists():
        raise NotFound("This store has no webhook destination.")
    return signing_secret_set(store=store, secret=secret_new())


def _delivery_new(*, event, destination: WebhookChannel, replay_of=None) -> WebhookDelivery:
    now = timezone.now()
    status = (
        WebhookDelivery.STATUS_PENDING if destination.enabled else WebhookDelivery.STATUS_DISABLED
    )
    delivery = WebhookDelivery.objects.create(
        store_id=event.store_id,
        event=event,
        event_occurred_at=event.occurred_at,
        event_type=event.type,
        destination=destination,
        destination_origin=url_origin(destination.url),
        status=status,
        next_attempt_at=now if status == WebhookDelivery.STATUS_PENDING else None,
        enqueued_at=now,
        replay_of=replay_of,
        created_at=now,
        updated_at=now,
    )
    # Logged with the id of the request that created it: its attempts may be made by a drain
    # another request queued, so this line links the request to the delivery id.
    logger.info(
        "webhook delivery %s created: event %s (%s), destination %s, %s",
        delivery.pk,
        event.pk,
        event.type,
        destination.pk,
        status,
        extra={
            "delivery_id": str(delivery.pk),
            "event_id": str(event.pk),
            "event_type": event.type,
            "destination_id": destination.pk,
            "store_id": event.store_id,
            "delivery_status": status,
        },
    )
    return delivery


def deliveries_create_for_event(*, event) -> list[WebhookDelivery]:
    """Subscribed to events.record (webhooks/apps.py): runs inside the event's transaction.

    One delivery per channel of the store whose allowed_notifications include the event's type:
    `pending` to an enabled channel (its drain queued on commit), `disabled` (never sent) to a
    disabled one, so the history shows what it missed and recover can send it later.
    """
    channels = WebhookChannel.objects.filter(
        store_id=event.store_id, event_types__contains=[event.type]
    ).order_by("id")
    deliveries = []
    for channel in channels:
        delivery = _delivery_new(event=event, destination=channel)
        if delivery.status == WebhookDelivery.STATUS_PENDING:
            drain_request_on_commit(delivery.destination_id)
        deliveries.append(delivery)
    return deliveries


def _replay_cap_check(*, store) -> None:
    """At most WEBHOOKS_REPLAY_LIMIT replays per store in any WEBHOOKS_REPLAY_WINDOW_SECONDS;
    more is RateLimited, with Retry-After when the oldest counted replay leaves the window.

    Call inside the transaction that creates the replay: the store row lock serialises a
    store's replays, so concurrent ones cannot all pass the count together.
    """
    Store.objects.select_for_update(no_key=True).only("id").get(pk=store.pk)
    now = timezone.now()
    window = timedelta(seconds=settings.WEBHOOKS_REPLAY_WINDOW_SECONDS)
    limit = settings.WEBHOOKS_REPLAY_LIMIT  # at least 1 (config/settings/webhooks.py)
    # The limit-th newest replay in the window: none means there is room for one more.
    oldest_counted = (
        WebhookDelivery.objects.filter(
            store=store, replay_of__isnull=False, created_at__gt=now - window
        )
        .order_by("-created_at")
        .values_list("created_at", flat=True)[limit - 1 : limit]
        .first()
    )
    if oldest_counted is None:
        return
    wait = (oldest_counted + window - now).total_seconds()
    raise RateLimited(
        int(wait) + 1,
        f"At most {limit} replays per store in "
        f"{settings.WEBHOOKS_REPLAY_WINDOW_SECONDS:g} s; try later.",
    )


def delivery_replay(*, store, delivery_id) -> WebhookDelivery:
    """A new pending delivery of the same (retained) event to the delivery's own channel.

    Sends the event again; it never repeats the business action that recorded the event.
    Capped per store (_replay_cap_check) for the API and the admin alike.
    """
    original = delivery_get(store=store, delivery_id=delivery_id)
    with transaction.atomic():
        destination = WebhookChannel.objects.filter(store=store, pk=original.destination_id).first()
        if destination is None:
            raise ValidationFailed.field("destination", "the delivery's channel was deleted")
        if not destination.enabled:
            raise ValidationFailed.field("destination", "the delivery's channel is disabled")
        _replay_cap_check(store=store)
        delivery = _delivery_new(
            event=original.event, destination=destination, replay_of=original.pk
        )
        drain_request_on_commit(delivery.destination_id)
    return delivery
