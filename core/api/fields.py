"""Serializer fields shared by the areas, and the length-first rule every client string obeys
(docs/api/hardening.md "Length first"): a string longer than its field allows is refused before
any other rule reads it, as that refusal alone; DRF would run every validator even after
`max_length` failed, so the length is checked in `run_validation`.
"""

from collections.abc import Iterable, Mapping

from django.core.exceptions import ImproperlyConfigured
from rest_framework import serializers

DEFAULT_MAX_LENGTH_MESSAGE = "must be at most {max_length} characters"
# The longest Authorization header read (API keys and access tokens are under 60 characters).
AUTHORIZATION_MAX_LENGTH = 1024
# The longest value of a query or form parameter whose field states no bound of its own (an
# OAuth `state`, a pattern-checked id), far above any value a client sends.
PARAMETER_MAX_LENGTH = 1024


class LengthFirstMixin:
    """Refuses a string longer than `input_length_limit()` before any other rule of the field.

    The message is the field's own `max_length` message where it has one (so a field that
    words its rule once keeps one wording), else DEFAULT_MAX_LENGTH_MESSAGE.
    """

    def input_length_limit(self) -> int | None:
        return getattr(self, "max_length", None)

    def run_validation(self, data=serializers.empty):
        limit = self.input_length_limit()
        if isinstance(data, str) and limit is not None and len(data) > limit:
            self.length_failure(data, limit)
        return super().run_validation(data)

    def length_failure(self, data: str, limit: int):
        message = self.error_messages.get("max_length", DEFAULT_MAX_LENGTH_MESSAGE)
        raise serializers.ValidationError(message.format(max_length=limit), code="max_length")


class StrictCharField(LengthFirstMixin, serializers.CharField):
    """A CharField that takes only JSON strings (DRF's would turn 12 or true into "12"/"True",
    which the schema, type string, says we refuse), of at most `max_length` characters,
    checked first. `max_length` is required: a request string without a bound is the class of
    bug length-first exists for."""

    default_error_messages = {"not_a_string": "must be a string"}

    def __init__(self, **kwargs):
        if kwargs.get("max_length") is None and not kwargs.get("read_only"):
            raise ImproperlyConfigured(f"{type(self).__name__} needs a max_length.")
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


class LengthFirstChoiceField(LengthFirstMixin, serializers.ChoiceField):
    """A choice whose input is compared only when it is no longer than the longest choice; a
    longer one is refused as not a choice, its echo in the message shortened."""

    def input_length_limit(self) -> int:
        return max((len(str(choice)) for choice in self.choice_strings_to_values), default=0)

    def length_failure(self, data: str, limit: int):
        if "max_length" in self.error_messages:
            super().length_failure(data, limit)
        self.fail("invalid_choice", input=data[: limit + 1] + "…")


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer only: DRF's IntegerField also takes "5", 5.0 and true (bool is an int
    in Python), which the schema (type integer) says we refuse. No string is read."""

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


def too_long_message(name: str, limit: int) -> str:
    """A parameter's refusal where no field words it (the OAuth endpoints)."""
    return f"{name} is longer than {limit} characters."


def input_length_limit(field) -> int | None:
    """The longest string `field` (a serializer field) reads, if it declares one."""
    if isinstance(field, LengthFirstMixin):
        return field.input_length_limit()
    return getattr(field, "max_length", None)


def overlong_parameters(
    params: Mapping[str, Iterable[str]], fields: Mapping, *, default_limit: int
) -> dict[str, int]:
    """The parameters of a form or query (`params`: a QueryDict's `lists()`, as a mapping) with
    a value longer than its field in `fields` allows (a serializer's `fields`), or than
    `default_limit` for a parameter no field declares: {name: limit}, names cut to
    `default_limit`. Used where no serializer parses the request itself (the OAuth endpoints:
    oauthlib does), so the lengths are still checked first, from the serializers that describe
    those requests."""
    overlong = {}
    for name, values in params.items():
        field = fields.get(name)
        limit = input_length_limit(field) if field is not None else None
        limit = default_limit if limit is None else limit
        if len(name) > default_limit or any(len(value) > limit for value in values):
            overlong[name[:default_limit]] = limit
    return overlong
