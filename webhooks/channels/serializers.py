"""The request and response contract of /api/v2/webhook-channels, as the official
SDK (`sellapp-sdk` 0.2.1, `client.webhook_channels`) sends and reads it."""

import ipaddress
import logging
from urllib.parse import urlsplit

from django.conf import settings
from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from core.api.fields import LengthFirstChoiceField, StrictBooleanField, StrictCharField
from core.api.pagination import MAX_PAGE_SIZE
from core.api.schema import response_example
from core.api.serializers import ClosedObjectSerializer
from events.registry import EVENT_TYPES
from webhooks.dispatch.addresses import (
    MAX_URL_LENGTH,
    URL_PATTERN,
    URL_PATTERN_COMPILED,
    UrlRefused,
    address_check,
    private_channels_allowed,
    refusal_kind,
)
from webhooks.dispatch.connection import ip_literal, resolve
from webhooks.dispatch.outbound import DNS_CHECK, outbound_call
from webhooks.models import WebhookChannel, url_origin

MAX_NAME_LENGTH = 100
MAX_SEARCH_LENGTH = 255

logger = logging.getLogger(__name__)


# Duplicates are accepted (and merged); a longer list is refused.
MAX_EVENT_TYPES = 50


def _name_refused(host: str, timeout: float, detail: str) -> UrlRefused:
    """One refusal for a name that does not resolve, answers too late, or resolves to an
    address webhooks may not reach: telling them apart would tell the caller which internal
    names exist. The operators' log has the detail (the host, never the URL's path, which may
    hold a credential)."""
    logger.info("webhook host %s refused: %s", host, detail)
    return UrlRefused(
        f"host {host} did not resolve within {timeout:g} s to public internet addresses only"
    )


def url_check(url: str, *, store_id: int | None = None) -> str:
    """Validates a channel URL at save time for the store `store_id`; returns it. Raises
    UrlRefused."""
    if len(url) > MAX_URL_LENGTH:
        raise UrlRefused(f"must be at most {MAX_URL_LENGTH} characters")
    if not URL_PATTERN_COMPILED.match(url):
        raise UrlRefused(
            "must be an absolute URL: scheme, host and optional port, path and query of "
            "RFC 3986 characters (percent-encode others), no credentials, no fragment"
        )
    # The pattern admits a host, a port of 1..65535, no credentials and no fragment: what is
    # left to judge is the scheme and where the host leads.
    parts = urlsplit(url)
    allowed_schemes = ("https", "http") if private_channels_allowed() else ("https",)
    if parts.scheme not in allowed_schemes:
        raise UrlRefused("must be an https URL")
    host = parts.hostname
    if ip_literal(host):
        try:
            address_check(host)
        except UrlRefused as refusal:
            # The caller's own IP literal: naming its kind of range tells them nothing new.
            raise UrlRefused(f"host {host} is {refusal}") from None
        return url
    # Bounded well below the resolver's own timeouts (glibc: 5 s per try and server), and in
    # number (webhooks/dispatch/outbound.py): the request's thread waits for it.
    timeout = settings.WEBHOOKS_DNS_TIMEOUT_SECONDS
    try:
        with outbound_call(kind=DNS_CHECK, store_id=store_id, seconds=timeout):
            addresses = resolve(host, timeout=timeout, store_id=store_id)
    except (OSError, UnicodeError) as error:
        if private_channels_allowed():
            return url
        raise _name_refused(host, timeout, f"does not resolve ({error})") from None
    for address in addresses:
        kind = refusal_kind(ipaddress.ip_address(address.split("%", 1)[0]))
        if kind is not None:
            raise _name_refused(host, timeout, f"resolves to {address} ({kind})")
    return url


@extend_schema_field({"type": "string", "maxLength": MAX_URL_LENGTH, "pattern": URL_PATTERN})
class ChannelUrlField(StrictCharField):
    """A channel URL as url_check below accepts it: its shape (the schema
    states the same length and pattern) and the addresses its host resolves to (SSRF)."""

    def __init__(self, **kwargs):
        # The length first (core/api/fields.py): no longer URL reaches url_check.
        super().__init__(trim_whitespace=False, max_length=MAX_URL_LENGTH, **kwargs)

    def to_internal_value(self, data):
        url = super().to_internal_value(data)
        store = self.context.get("store")  # the bound on DNS lookups in flight is per store
        try:
            return url_check(url, store_id=store.pk if store is not None else None)
        except UrlRefused as error:
            raise serializers.ValidationError(str(error)) from None


class EventTypeListField(serializers.ListField):
    """Registered event types (events.registry), at least one, at most MAX_EVENT_TYPES;
    duplicates are merged and the list is stored sorted."""

    child = LengthFirstChoiceField(
        choices=sorted(EVENT_TYPES),
        error_messages={
            "invalid_choice": "unknown event type {input!r}; see /api/v2/webhook-event-types"
        },
    )

    def __init__(self, **kwargs):
        super().__init__(
            min_length=1,
            max_length=MAX_EVENT_TYPES,
            error_messages={
                "min_length": "must name at least one event type",
                "max_length": f"must name at most {MAX_EVENT_TYPES} event types",
            },
            **kwargs,
        )

    def run_child_validation(self, data):
        try:
            return super().run_child_validation(data)
        except serializers.ValidationError as error:
            # DRF keys child errors by index ({0: [...]}); the envelope wants messages.
            messages = [str(m) for ms in error.detail.values() for m in ms]
            raise serializers.ValidationError(messages) from None

    def run_validation(self, data=serializers.empty):
        # Merged after the length rules: they count what the client sent.
        return sorted(set(super().run_validation(data)))


class ChannelUrlReadField(serializers.CharField):
    """The URL in full for a reader who may change it (context `url_in_full`); else only its
    origin, as the delivery list's `destination_origin`: the path and query can be a
    credential (docs/design.md "Webhooks")."""

    def to_representation(self, url):
        return url if self.context.get("url_in_full") else url_origin(url)


class WebhookChannelCreateSerializer(ClosedObjectSerializer):
    """Body of POST: url and allowed_notifications, name optional."""

    name = StrictCharField(
        max_length=MAX_NAME_LENGTH, allow_null=True, allow_blank=True, required=False
    )
    url = ChannelUrlField(
        help_text="Public https URL receiving the deliveries (the same rules as the "
        "channel's); the same canonical URL twice in one store is a 422."
    )
    allowed_notifications = EventTypeListField(
        help_text="Event types sent to this channel; see GET /api/v2/webhook-event-types."
    )

    def validate_name(self, name):
        return name or None


class WebhookChannelReplaceSerializer(WebhookChannelCreateSerializer):
    """Body of PUT: the whole representation, name (null allowed) included."""

    name = StrictCharField(max_length=MAX_NAME_LENGTH, allow_null=True, allow_blank=True)


class WebhookChannelUpdateSerializer(WebhookChannelCreateSerializer):
    """Body of PATCH (validated with partial=True): any of them, and `enabled`."""

    enabled = StrictBooleanField(
        required=False, help_text="true turns a disabled channel back on; false turns it off."
    )


class WebhookChannelSerializer(serializers.ModelSerializer):
    """A channel; its URL in full only for a credential with `webhook:write` (context
    `url_in_full`), and never a secret."""

    id = serializers.UUIDField(source="uid")
    url = ChannelUrlReadField(
        help_text="The full URL for a credential with `webhook:write`; otherwise its origin."
    )
    allowed_notifications = serializers.ListField(
        source="event_types", child=serializers.ChoiceField(choices=sorted(EVENT_TYPES))
    )
    signing_secret_configured = serializers.SerializerMethodField()
    disabled_reason = serializers.SerializerMethodField()

    class Meta:
        model = WebhookChannel
        fields = [
            "id",
            "name",
            "url",
            "allowed_notifications",
            "signing_secret_configured",
            "enabled",
            "disabled_reason",
        ]

    def get_signing_secret_configured(self, channel) -> bool:
        return bool(self.context.get("signing_secret_configured"))

    def get_disabled_reason(self, channel) -> str | None:
        return channel.disabled_reason or None


@extend_schema_field(
    {
        "type": "object",
        "nullable": True,
        "properties": {
            "value": {"type": "string", "nullable": True, "maxLength": MAX_SEARCH_LENGTH}
        },
        "additionalProperties": False,
    }
)
class SearchTermField(serializers.Field):
    """The SDK's `{"value": string|null}`."""

    def to_internal_value(self, data):
        if not isinstance(data, dict) or not set(data) <= {"value"}:
            raise serializers.ValidationError('must be {"value": string or null}')
        data = data.get("value")
        if data is None:
            return None
        if not isinstance(data, str):
            raise serializers.ValidationError('must be {"value": string or null}')
        if len(data) > MAX_SEARCH_LENGTH:
            raise serializers.ValidationError(f"must be at most {MAX_SEARCH_LENGTH} characters")
        return data


# The schema says an event type; null is taken too, as absent (the SDK may send it), but not
# written there: drf-spectacular would write a `nullable` enum without a `type`.
@extend_schema_field({"type": "string", "enum": sorted(EVENT_TYPES)})
class NullableEventField(LengthFirstChoiceField):
    """An event type, or null taken as absent (without `allow_null`, which the schema would
    show as a `nullable` enum without a `type`)."""

    def validate_empty_values(self, data):
        if data is None:
            return True, None
        return super().validate_empty_values(data)


class WebhookChannelSearchSerializer(ClosedObjectSerializer):
    search = SearchTermField(required=False, allow_null=True)
    event = NullableEventField(choices=sorted(EVENT_TYPES), required=False)
    page = serializers.IntegerField(required=False, min_value=1)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=MAX_PAGE_SIZE)


class WebhookSigningSecretSerializer(ClosedObjectSerializer):
    # Any characters but NUL, which PostgreSQL text cannot hold: DRF refuses it in every string,
    # and this validator makes the schema say so (a pattern).
    signing_secret = StrictCharField(
        min_length=32,
        max_length=255,
        trim_whitespace=False,
        validators=[RegexValidator(r"^[^\x00]*$", "Null characters are not allowed.")],
    )


class WebhookSigningSecretStateSerializer(serializers.Serializer):
    signing_secret_configured = serializers.BooleanField()


class WebhookChannelTestSerializer(ClosedObjectSerializer):
    event = LengthFirstChoiceField(choices=sorted(EVENT_TYPES))


class WebhookChannelTestResultSerializer(serializers.Serializer):
    channel_id = serializers.UUIDField()
    event = serializers.CharField()
    status = serializers.ChoiceField(choices=["delivered"])


WEBHOOK_CHANNEL_EXAMPLE = {
    "id": "0b6f7c1e-2d3a-4c5b-8e9f-a0b1c2d3e4f5",
    "name": "Fulfilment",
    "url": "https://hooks.example.com/storefront",
    "allowed_notifications": ["order.completed"],
    "signing_secret_configured": True,
    "enabled": True,
    "disabled_reason": None,
}
extend_schema_serializer(examples=[response_example("Channel", WEBHOOK_CHANNEL_EXAMPLE)])(
    WebhookChannelSerializer
)


class WebhookChannelRecoverSerializer(ClosedObjectSerializer):
    since = serializers.DateTimeField()
    until = serializers.DateTimeField(required=False, allow_null=True)


class WebhookChannelRecoverResultSerializer(serializers.Serializer):
    queued = serializers.IntegerField()
    since = serializers.DateTimeField()
    until = serializers.DateTimeField()
