"""Writes and reads of webhook channels: create, replace/update, delete, the store's
signing secret as the SDK sets it, and the synchronous test send.

The URL and event types arrive validated by webhooks.channels.serializers (the SSRF check, the
registry); the delivery pipeline itself is webhooks/deliveries/services.py's and
webhooks/dispatch/attempts.py's."""

import base64
import binascii
import secrets as secrets_module
import uuid
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.api.errors import Conflict, NotFound, ValidationFailed
from events.models import Event
from events.registry import event_type_get
from stores.models import Store
from webhooks.dispatch.failures import channel_enabled_set, pending_deliveries_settle
from webhooks.dispatch.outbound import TEST_SEND, outbound_call
from webhooks.dispatch.sender import send, signing_secrets, webhook_body
from webhooks.models import WebhookChannel, WebhookSendSlot, WebhookSigningSecret

DEFAULT_PORTS = {"http": 80, "https": 443}
# Standard Webhooks secrets are 24..64 random bytes.
WHSEC_KEY_BYTES = range(24, 65)


def url_canonical(url: str) -> str:
    """The URL as stored and compared: scheme and host in lower case, no default port. Two
    spellings of one receiver are one URL ("the same canonical URL twice")."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    netloc = host if port in (None, DEFAULT_PORTS.get(parts.scheme.lower())) else f"{host}:{port}"
    return urlunsplit((parts.scheme.lower(), netloc, parts.path, parts.query, ""))


def _saved(channel: WebhookChannel) -> WebhookChannel:
    try:
        with transaction.atomic():
            channel.save()
    except IntegrityError:
        raise ValidationFailed.field(
            "url", "this store already has a webhook channel with this URL"
        ) from None
    return channel


def channel_create(*, store, url: str, allowed_notifications: list[str], name=None):
    now = timezone.now()
    channel = WebhookChannel(
        store=store,
        name=name,
        url=url_canonical(url),
        event_types=allowed_notifications,
        created_at=now,
        updated_at=now,
    )
    with transaction.atomic():
        channel_room_check(store=store)
        return _saved(channel)


def channel_update(*, channel: WebhookChannel, **changes) -> WebhookChannel:
    """PUT (every field) and PATCH (some): name, url, allowed_notifications, enabled."""
    with transaction.atomic():
        # NO KEY UPDATE: an event's fan-out, checking its deliveries' foreign key to this row
        # (KEY SHARE), does not wait for it, so the two cannot deadlock.
        channel = WebhookChannel.objects.select_for_update(no_key=True).get(pk=channel.pk)
        if "url" in changes:
            url = url_canonical(changes["url"])
            if url != channel.url:
                channel.failing_since = None  # a new URL starts its own failure clock
            channel.url = url
        if "name" in changes:
            channel.name = changes["name"]
        if "allowed_notifications" in changes:
            channel.event_types = changes["allowed_notifications"]
        channel.updated_at = timezone.now()
        _saved(channel)
        if "enabled" in changes and changes["enabled"] != channel.enabled:
            channel_enabled_set(channel=channel, enabled=changes["enabled"])
    return channel


def channel_delete(*, channel: WebhookChannel) -> None:
    with transaction.atomic():
        pending_deliveries_settle(channel_id=channel.pk, now=timezone.now())
        WebhookSendSlot.objects.filter(
            scope=WebhookSendSlot.SCOPE_CHANNEL, owner=channel.pk
        ).delete()
        channel.delete()


def signing_secret_supplied(*, store, signing_secret: str) -> None:
    """Sets the store's secret from the SDK's `signing_secret` (32..255 characters).

    A `whsec_` secret is a Standard Webhooks secret, used as given: its base64 must decode to
    24..64 bytes, and receivers verify with `Webhook(secret)`. Any other string is the HMAC key
    itself (its UTF-8 bytes), kept as `whsec_` + base64 of them: receivers verify with
    `Webhook(secret.encode())`. The previous secret keeps signing for 24 hours.
    """
    if signing_secret.startswith(SECRET_PREFIX):
        try:
            key = base64.b64decode(signing_secret.removeprefix(SECRET_PREFIX), validate=True)
        except (binascii.Error, ValueError):
            key = b""
        if len(key) not in WHSEC_KEY_BYTES:
            raise ValidationFailed.field(
                "signing_secret", "a whsec_ secret must be base64 of 24 to 64 bytes"
            )
        stored = signing_secret
    else:
        stored = SECRET_PREFIX + base64.b64encode(signing_secret.encode()).decode()
    # Serialises the store's secret changes (the first one inserts the row).
    with transaction.atomic():
        Store.objects.select_for_update(no_key=True).only("id").get(pk=store.pk)
        signing_secret_set(store=store, secret=stored)


def test_body(*, store, event_type: str) -> tuple[str, bytes]:
    """The mock event of a test send: the type's example as an event of the store, in the body every
    delivery has (webhooks/dispatch/sender.py), with `"test": true`; a fresh `evt_test_` id each
    time. It is never recorded in the journal."""
    registered = event_type_get(event_type)
    event = Event(
        id=f"evt_test_{uuid.uuid4().hex}",
        store=store,
        type=registered.type,
        version=registered.version,
        subject_type=registered.subject_type,
        subject_id="test",
        data=registered.example,
        occurred_at=timezone.now(),
    )
    return event.id, webhook_body(event, test=True)


def channel_test_send(*, store, channel: WebhookChannel, event_type: str) -> None:
    """Sends one signed test event now: one attempt within WEBHOOKS_TEST_SEND_TIMEOUT_SECONDS, no
    retry, no redirect followed (the sender follows none), at most one at a time per store and a few
    per process (webhooks/dispatch/outbound.py: 429 or 503 beyond). Raises ValidationFailed saying
    what the receiver did otherwise."""
    if event_type not in channel.event_types:
        raise ValidationFailed.field("event", "is not in the channel's allowed_notifications")
    if not channel.enabled:
        raise Conflict("The webhook channel is disabled; enable it first.")
    secrets = signing_secrets(store_id=store.pk)
    if not secrets:
        raise ValidationFailed.field(
            "signing_secret", "set the store's signing secret before sending a test event"
        )
    message_id, body = test_body(store=store, event_type=event_type)
    seconds = settings.WEBHOOKS_TEST_SEND_TIMEOUT_SECONDS
    with outbound_call(kind=TEST_SEND, store_id=store.pk, seconds=seconds):
        result = send(
            url=channel.url, message_id=message_id, body=body, secrets=secrets, seconds=seconds
        )
    if not result.succeeded:
        outcome = (
            f"the receiver answered HTTP {result.response_status}"
            if result.response_status is not None
            else f"no answer: {result.error}"
        )
        raise ValidationFailed.field("url", f"test event not delivered: {outcome}")


SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32


def secret_new() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets_module.token_bytes(SECRET_BYTES)).decode()


# --- channels -------------------------------------------------------------------------


def channel_room_check(*, store) -> None:
    """A store has at most WEBHOOKS_STORE_CHANNELS_MAX channels: every way of making one (the
    channels API, the deprecated channel) calls this first, in its transaction. Locks the
    store's row, so concurrent creates count one after another."""
    Store.objects.select_for_update(no_key=True).only("id").get(pk=store.pk)
    limit = settings.WEBHOOKS_STORE_CHANNELS_MAX
    if WebhookChannel.objects.filter(store=store).count() >= limit:
        message = (
            f"A store has at most {limit} webhook channels; delete one, or send more event "
            "types to one channel."
        )
        raise ValidationFailed({"non_field_errors": [message]}, message=message)


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


def signing_secret_rotate(*, store) -> WebhookSigningSecret:
    """A new server-generated store secret (the channel alias and the admin's rotation);
    the previous one keeps signing for WEBHOOKS_PREVIOUS_SECRET_TTL."""
    if not WebhookChannel.objects.filter(store=store).exists():
        raise NotFound("This store has no webhook destination.")
    return signing_secret_set(store=store, secret=secret_new())
