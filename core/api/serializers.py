"""TODO docstring."""

from drf_spectacular.extensions import OpenApiSerializerExtension
from rest_framework import serializers


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
