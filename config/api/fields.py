"""Serializer fields shared by the areas."""

from rest_framework import serializers


class StrictCharField(serializers.CharField):
    """A CharField that takes only JSON strings: DRF's would turn 12 or true into "12"/"True",
    which the schema (type string) says we refuse."""

    default_error_messages = {"not_a_string": "must be a string"}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)
