from rest_framework import serializers

from config.api.schema import ErrorEnvelopeSerializer
from events.models import Event
from events.registry import EVENT_TYPES, SUBJECT_TYPES


def event_resource(event: Event) -> dict:
    """The Event (v2) resource: the journal's items and the body of webhook deliveries."""
    return {
        "id": event.id,
        "type": event.type,
        "version": event.version,
        "store_id": str(event.store_id),
        "occurred_at": event.occurred_at.isoformat().replace("+00:00", "Z"),
        "subject": {"type": event.subject_type, "id": event.subject_id},
        "data": event.data,
    }


# OpenAPI descriptions of the journal responses (rendering uses `event_resource`).
class EventSubjectSchema(serializers.Serializer):
    type = serializers.ChoiceField(choices=sorted(SUBJECT_TYPES))
    id = serializers.CharField()


class EventSchema(serializers.Serializer):
    id = serializers.CharField()
    type = serializers.ChoiceField(choices=sorted(EVENT_TYPES))
    version = serializers.IntegerField()
    store_id = serializers.CharField()
    occurred_at = serializers.DateTimeField()
    subject = EventSubjectSchema()
    data = serializers.DictField(
        help_text="order.completed: total_cents (integer, minor units) and currency "
        "(string); empty for coupon events."
    )


class EventListMetaSchema(serializers.Serializer):
    next_cursor = serializers.CharField(
        help_text="Send as `cursor` to get the events after this page; present on every page."
    )
    has_more = serializers.BooleanField(help_text="Whether another page is ready now.")
    retention_days = serializers.IntegerField()


class EventListSchema(serializers.Serializer):
    data = EventSchema(many=True)
    meta = EventListMetaSchema()


class CursorFallbackSchema(serializers.Serializer):
    transport = serializers.ChoiceField(choices=["cursor_polling"])
    url = serializers.URLField()


class CursorExpiredSchema(ErrorEnvelopeSerializer):
    fallback = CursorFallbackSchema()
