from rest_framework import serializers

from config.api.fields import StrictCharField
from events.registry import EVENT_TYPES
from webhooks.addresses import MAX_URL_LENGTH
from webhooks.models import WebhookDelivery, WebhookDestination

# Duplicates are accepted (and merged); a longer list is refused.
MAX_EVENT_TYPES = 50


class WebhookDestinationSerializer(serializers.ModelSerializer):
    """The store's destination; the secret is shown only on creation and rotation."""

    disabled_reason = serializers.SerializerMethodField()
    event_types = serializers.ListField(child=serializers.ChoiceField(choices=sorted(EVENT_TYPES)))

    class Meta:
        model = WebhookDestination
        fields = ["url", "event_types", "enabled", "disabled_reason", "created_at", "updated_at"]

    def get_disabled_reason(self, destination) -> str | None:
        return destination.disabled_reason or None


class WebhookDestinationWithSecretSerializer(WebhookDestinationSerializer):
    class Meta(WebhookDestinationSerializer.Meta):
        fields = [*WebhookDestinationSerializer.Meta.fields, "secret"]


class StrictBooleanField(serializers.BooleanField):
    """JSON true/false only (DRF's would take "yes", 1, "true"; the schema says boolean)."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class WebhookDestinationInputSerializer(serializers.Serializer):
    """PUT body; its OpenAPI schema is views.DESTINATION_PUT_SCHEMA (same rules)."""

    url = StrictCharField(max_length=MAX_URL_LENGTH, trim_whitespace=False)
    event_types = serializers.ListField(
        child=StrictCharField(max_length=120), allow_empty=False, max_length=MAX_EVENT_TYPES
    )
    enabled = StrictBooleanField(required=False, default=True)

    def validate(self, attrs):
        unknown = set(self.initial_data) - set(self.fields)
        if unknown:
            raise serializers.ValidationError(
                {name: ["is not a property of a webhook destination"] for name in sorted(unknown)}
            )
        return attrs


class WebhookEventTypeSerializer(serializers.Serializer):
    type = serializers.CharField()
    version = serializers.IntegerField()
    description = serializers.CharField()


class WebhookDeliverySerializer(serializers.ModelSerializer):
    id = serializers.CharField()
    event_id = serializers.CharField()
    status = serializers.ChoiceField(choices=[value for value, _ in WebhookDelivery.STATUSES])
    destination_origin = serializers.CharField(
        help_text="scheme://host[:port] of the destination; the full URL is never shown."
    )

    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "event_id",
            "event_type",
            "status",
            "destination_origin",
            "attempts",
            "response_status",
            "response_body",
            "next_attempt_at",
            "created_at",
            "updated_at",
        ]
