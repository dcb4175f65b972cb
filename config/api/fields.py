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


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer only: DRF's IntegerField also takes "5", 5.0 and true (bool is an int
    in Python), which the schema (type integer) says we refuse."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """A JSON true or false only: DRF's BooleanField also takes "true", 1 and "yes"."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data
