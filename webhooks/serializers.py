"""The request and response contract of the webhooks area; the OpenAPI schema is derived from
these classes (drf-spectacular), so each rule is written once, here."""

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from core.api.fields import LengthFirstChoiceField, StrictBooleanField, StrictCharField
from core.api.schema import response_example
from events.registry import EVENT_TYPES
from webhooks.addresses import (
    MAX_URL_LENGTH,
    URL_PATTERN,
    DestinationRefused,
    url_check,
    url_origin,
)
from webhooks.models import WebhookChannel, WebhookDelivery
from webhooks.selectors import signing_secrets

# Duplicates are accepted (and merged); a longer list is refused.
MAX_EVENT_TYPES = 50


class ClosedObjectSerializer(serializers.Serializer):
    """A request body that takes only the declared properties: any other one is a 422 naming
    it (a typo such as `events` must not silently do nothing), and the schema says
    `additionalProperties: false` (ClosedObjectSchema below)."""

    default_error_messages = {"unknown_property": "is not a property of this request body"}

    def to_internal_value(self, data):
        # Checked before the fields, so a refused body costs no field validation (DNS lookups).
        unknown = sorted(set(data) - set(self.fields)) if hasattr(data, "keys") else []
        if unknown:
            message = self.error_messages["unknown_property"]
            raise serializers.ValidationError({name: [message] for name in unknown})
        return super().to_internal_value(data)


class ClosedObjectSchema(OpenApiSerializerExtension):
    target_class = ClosedObjectSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        if direction == "request":
            schema["additionalProperties"] = False
        return schema


@extend_schema_field({"type": "string", "maxLength": MAX_URL_LENGTH, "pattern": URL_PATTERN})
class DestinationUrlField(StrictCharField):
    """A destination URL as webhooks.addresses.url_check accepts it: its shape (the schema
    states the same length and pattern) and the addresses its host resolves to (SSRF)."""

    def __init__(self, **kwargs):
        # The length first (core/api/fields.py): no longer URL reaches url_check.
        super().__init__(trim_whitespace=False, max_length=MAX_URL_LENGTH, **kwargs)

    def to_internal_value(self, data):
        url = super().to_internal_value(data)
        store = self.context.get("store")  # the bound on DNS lookups in flight is per store
        try:
            return url_check(url, store_id=store.pk if store is not None else None)
        except DestinationRefused as error:
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


class WebhookDestinationPutSerializer(ClosedObjectSerializer):
    """Body of PUT /api/v2/webhook-destination."""

    url = DestinationUrlField(
        help_text="https URL receiving the deliveries. Private, loopback, link-local and cloud "
        "metadata addresses are refused with 422 (link-local and metadata even where the "
        "deployment allows private destinations, in development). A host name must resolve "
        "within WEBHOOKS_DNS_TIMEOUT_SECONDS (2 s by default) to allowed addresses only; the "
        "422 of a name does not say which of these it failed."
    )
    event_types = EventTypeListField(
        help_text="Event types to deliver; see GET /api/v2/webhook-event-types."
    )
    enabled = StrictBooleanField(required=False, default=True)


class WebhookDeliveryReplaySerializer(ClosedObjectSerializer):
    """Body of the replay: an empty object. The destination, payload and query cannot be
    overridden (spec "Events and deliveries", replay rule 4)."""


class DestinationUrlReadField(serializers.CharField):
    """The URL in full for a reader who may change it (context `url_in_full`); else only its
    origin, as the delivery list's `destination_origin`: the path and query can be a
    credential (docs/design.md "Webhooks")."""

    def to_representation(self, url):
        return url if self.context.get("url_in_full") else url_origin(url)


class WebhookDestinationSerializer(serializers.ModelSerializer):
    """The store's destination; the secret is shown only on creation and rotation."""

    url = DestinationUrlReadField(
        help_text="The full URL for a credential with `webhook:write`; otherwise only its "
        "origin, scheme://host[:port] (a staff member's key, a `webhook:read` key): the path "
        "and query can be a credential."
    )
    disabled_reason = serializers.SerializerMethodField()
    event_types = serializers.ListField(child=serializers.ChoiceField(choices=sorted(EVENT_TYPES)))

    class Meta:
        model = WebhookChannel
        fields = ["url", "event_types", "enabled", "disabled_reason", "created_at", "updated_at"]

    def get_disabled_reason(self, destination) -> str | None:
        return destination.disabled_reason or None


class WebhookDestinationWithSecretSerializer(WebhookDestinationSerializer):
    # The store-wide signing secret (webhooks.models.WebhookSigningSecret).
    secret = serializers.SerializerMethodField()

    class Meta(WebhookDestinationSerializer.Meta):
        fields = [*WebhookDestinationSerializer.Meta.fields, "secret"]

    def get_secret(self, destination) -> str:
        return signing_secrets(store_id=destination.store_id)[0]


# Renders an events.registry.EventType.
class WebhookEventTypeSerializer(serializers.Serializer):
    type = serializers.CharField()
    version = serializers.IntegerField()
    description = serializers.CharField()
    schema = serializers.DictField(help_text="JSON Schema (2020-12) of the event's `data`.")
    # Always present; optional in the schema only so that the list's OpenAPI example can leave
    # it out (Spectral reads an object with `type` and `example` in an example as a schema).
    example = serializers.DictField(
        required=False, help_text="A `data` of this type, valid against `schema`."
    )


# `{data: [...]}`, not a page: many=False tells drf-spectacular this list action's response is
# one object.
@extend_schema_serializer(many=False)
class WebhookEventTypeListSerializer(serializers.Serializer):
    data = WebhookEventTypeSerializer(many=True)


# OpenAPI examples (spec "Webhook delivery", "Webhook event type"; docs/design.md "Webhooks"),
# used by webhooks/views.py.
WEBHOOK_DELIVERY_EXAMPLE = {
    "id": "3f0c9a52-7d1e-4b8a-9c2f-5e6d7a8b9c0d",
    "event_id": "evt_01J0Z8X4R2M6N7P8Q9R0S1T2V3",
    "event_type": "order.completed",
    "status": "succeeded",
    "channel_id": "0b6f7c1e-2d3a-4c5b-8e9f-a0b1c2d3e4f5",
    "destination_origin": "https://hooks.example.com",
    "attempts": 1,
    "response_status": 200,
    "response_body": "ok",
    "next_attempt_at": None,
    "created_at": "2026-06-02T14:05:01Z",
    "updated_at": "2026-06-02T14:05:02Z",
}
WEBHOOK_DELIVERY_REPLAYED_EXAMPLE = {
    **WEBHOOK_DELIVERY_EXAMPLE,
    "id": "8b7a6c5d-4e3f-4a2b-8c1d-0e9f8a7b6c5d",
    "status": "pending",
    "attempts": 0,
    "response_status": None,
    "response_body": None,
    "next_attempt_at": "2026-06-03T10:00:00Z",
    "created_at": "2026-06-03T10:00:00Z",
    "updated_at": "2026-06-03T10:00:00Z",
}
WEBHOOK_DESTINATION_PUT_EXAMPLE = {
    "url": "https://hooks.example.com/storefront",
    "event_types": ["order.completed"],
    "enabled": True,
}
WEBHOOK_DESTINATION_EXAMPLE = {
    **WEBHOOK_DESTINATION_PUT_EXAMPLE,
    "disabled_reason": None,
    "created_at": "2026-06-01T09:00:00Z",
    "updated_at": "2026-06-01T09:00:00Z",
}
WEBHOOK_DESTINATION_WITH_SECRET_EXAMPLE = {
    **WEBHOOK_DESTINATION_EXAMPLE,
    "secret": "whsec_c2lnbmluZy1zZWNyZXQtZXhhbXBsZS0wMTIzNDU2Nzg5YWI=",
}
WEBHOOK_EVENT_TYPES_EXAMPLE = {
    "data": [
        {
            "type": "order.completed",
            "version": 1,
            "description": "An order completed and delivery began.",
            # Shortened here, without `example` (the API gives both whole): see
            # WebhookEventTypeSerializer.example.
            "schema": {
                "type": "object",
                "properties": {
                    "total_cents": {"type": "integer", "minimum": 0},
                    "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
                },
                "required": ["total_cents", "currency"],
            },
        }
    ]
}


# The item of the paginated list (GET /api/v2/webhook-deliveries builds its page example).
@extend_schema_serializer(examples=[response_example("Delivery", WEBHOOK_DELIVERY_EXAMPLE)])
class WebhookDeliverySerializer(serializers.ModelSerializer):
    id = serializers.CharField()
    event_id = serializers.CharField()
    status = serializers.ChoiceField(choices=[value for value, _ in WebhookDelivery.STATUSES])
    destination_origin = serializers.CharField(
        help_text="scheme://host[:port] of the destination; the full URL is never shown."
    )
    channel_id = serializers.UUIDField(
        source="destination.uid",
        allow_null=True,
        default=None,
        help_text="The channel it is (or was) sent to; null once that channel is deleted.",
    )

    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "event_id",
            "event_type",
            "status",
            "channel_id",
            "destination_origin",
            "attempts",
            "response_status",
            "response_body",
            "next_attempt_at",
            "created_at",
            "updated_at",
        ]


class WebhookDeliveryAttemptSerializer(serializers.Serializer):
    """One attempt of a delivery (issue 31 §3): never the URL, nor its path or query."""

    attempt = serializers.IntegerField(source="number")
    attempted_at = serializers.DateTimeField(source="started_at")
    duration_ms = serializers.IntegerField(allow_null=True)
    response_status = serializers.IntegerField(allow_null=True)
    error = serializers.SerializerMethodField(
        help_text="What went wrong without an answer: `timeout`, `connect timeout`, "
        "`connection refused`, `DNS failure`, `TLS error`, `connection error`, `request error`, "
        "`reading the response failed`, `Refused destination`, `abandoned`; null when the "
        "receiver answered (see response_status)."
    )

    def get_error(self, attempt) -> str | None:
        # Stored as "<kind>: <origin or detail>" or "HTTP <status>" (webhooks/sender.py).
        if not attempt.error or attempt.error.startswith("HTTP "):
            return None
        return attempt.error.split(":", 1)[0]


# `{data: [...]}`, not a page.
@extend_schema_serializer(many=False)
class WebhookDeliveryAttemptListSerializer(serializers.Serializer):
    data = WebhookDeliveryAttemptSerializer(many=True)
