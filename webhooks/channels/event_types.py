"""TODO docstring."""

from drf_spectacular.utils import (
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers, viewsets
from rest_framework.response import Response

from core.api.schema import error_responses, response_example
from webhooks.channels.selectors import event_types_list
from webhooks.deliveries.views import WebhookAreaMixin


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


class WebhookEventTypeViewSet(WebhookAreaMixin, viewsets.GenericViewSet):
    serializer_class = WebhookEventTypeListSerializer

    @extend_schema(
        operation_id="webhook_event_types_list",
        summary="List the event types a webhook can receive",
        description="Every event type the store's channel is sent, with its description.",
        responses={200: WebhookEventTypeListSerializer, **error_responses(403)},
        examples=[response_example("Event types", WEBHOOK_EVENT_TYPES_EXAMPLE)],
    )
    def list(self, request):
        return Response(self.get_serializer({"data": event_types_list()}).data)
