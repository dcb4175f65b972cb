import functools
from datetime import UTC

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from core.api.schema import ErrorEnvelopeSerializer, response_example
from events.models import Event
from events.registry import EVENT_TYPES, SUBJECT_TYPES


class EventSubjectSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=sorted(SUBJECT_TYPES), source="subject_type")
    id = serializers.CharField(source="subject_id")


# OpenAPI example (spec "Event (v2)"): the item of the journal's page examples.
EVENT_EXAMPLE = {
    "id": "evt_01J0Z8X4R2M6N7P8Q9R0S1T2V3",
    "type": "order.completed",
    "version": 1,
    "store_id": "7",
    "occurred_at": "2026-06-02T14:05:00Z",
    "subject": {"type": "order", "id": "1001"},
    "data": {"total_cents": 4599, "currency": "EUR"},
}


@extend_schema_serializer(examples=[response_example("order.completed", EVENT_EXAMPLE)])
class EventSerializer(serializers.ModelSerializer):
    """The Event (v2) resource: the journal's items and the body of webhook deliveries."""

    type = serializers.ChoiceField(choices=sorted(EVENT_TYPES))
    store_id = serializers.CharField()  # v2 renders ids as strings
    # UTC with a `Z`, whatever the current time zone.
    occurred_at = serializers.DateTimeField(default_timezone=UTC)
    subject = EventSubjectSerializer(source="*")
    data = serializers.DictField(
        help_text="order.completed: total_cents (integer, minor units) and currency "
        "(string); empty for coupon events."
    )

    class Meta:
        model = Event
        fields = ["id", "type", "version", "store_id", "occurred_at", "subject", "data"]
        read_only_fields = fields


def event_resource(event: Event) -> dict:
    """The Event resource of one event, for the webhook delivery body."""
    return _event_serializer().to_representation(event)


@functools.cache
def _event_serializer() -> EventSerializer:
    """One serializer for every delivery body: its fields are built once. Building them anew
    (ModelSerializer.get_fields, deep copies of the declared fields) is a sizeable share of each
    delivery's own time in a drain (docs/benchmarks/webhooks.md). to_representation keeps no state
    between calls, so threads may share it."""
    return EventSerializer()


class CursorFallbackSchema(serializers.Serializer):
    transport = serializers.ChoiceField(choices=["cursor_polling"])
    url = serializers.URLField()


# OpenAPI description of the 410 body (core/api/errors.py renders it).
class CursorExpiredSchema(ErrorEnvelopeSerializer):
    fallback = CursorFallbackSchema()
