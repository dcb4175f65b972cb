"""Query filters of GET /api/v2/events (django-filter); bad values -> 422 naming each filter.

docs/design.md "Event journal": `type` (any string of at most the model's 120 characters, an
unknown type matching nothing; a trailing `*` matches every type it starts), `subject_type`
(`order`, `coupon`), `subject_id` (1..100 of [A-Za-z0-9_.:-]). A present but empty value is
refused too: it could mean "no filter" or "filter on nothing". drf-spectacular derives the
parameters from these filters, whose schemas are built from the values they check (registry
names, model field lengths, `SUBJECT_ID_PATTERN`, `TYPE_PATTERN`).
"""

import re

import django_filters
from django import forms
from drf_spectacular.utils import extend_schema_field

from core.api.filters import NonEmptyParametersForm
from events.models import Event
from events.registry import SUBJECT_TYPES

SUBJECT_ID_MAX_LENGTH = Event._meta.get_field("subject_id").max_length
# Subject ids are ours (stringified primary keys). `^...$` as JSON Schema reads it; the
# validator matches the whole value, so a trailing newline does not pass as `$` would let it.
SUBJECT_ID_PATTERN = rf"^[A-Za-z0-9_.:-]{{1,{SUBJECT_ID_MAX_LENGTH}}}$"
SUBJECT_ID_SCHEMA = {
    "type": "string",
    "minLength": 1,
    "maxLength": SUBJECT_ID_MAX_LENGTH,
    "pattern": SUBJECT_ID_PATTERN,
    "description": f"Only events about this subject id (1 to {SUBJECT_ID_MAX_LENGTH} of A-Z, "
    "a-z, 0-9, _ . : -).",
}
SUBJECT_TYPE_SCHEMA = {
    "type": "string",
    "enum": sorted(SUBJECT_TYPES),
    "description": "Only events about this kind of subject.",
}
TYPE_MAX_LENGTH = Event._meta.get_field("type").max_length
# At most one `*`, as the last character (docs/decisions/events.md "Type filter"); no NUL
# (forms.CharField refuses it: PostgreSQL text cannot hold it).
TYPE_PATTERN = r"^[^*\u0000]*[*]?$"
TYPE_SCHEMA = {
    "type": "string",
    "minLength": 1,
    "maxLength": TYPE_MAX_LENGTH,
    "pattern": TYPE_PATTERN,
    "description": "Only events of this type; an unregistered type matches none. A trailing "
    "`*` matches every type that starts with what precedes it (`order.*`: every `order.` "
    "type; `*` alone: every type). A `*` elsewhere is a 422.",
}


class EventFilterForm(NonEmptyParametersForm):
    """An absent parameter is no filter; a present, empty one is an error (not "no filter")."""

    empty_message = "must not be empty; omit the parameter to leave it out"


@extend_schema_field(SUBJECT_TYPE_SCHEMA)
class SubjectTypeFilter(django_filters.ChoiceFilter):
    pass


class SubjectIdField(forms.CharField):
    def __init__(self, **kwargs):
        # No stripping: "12\n" is not the subject id "12".
        super().__init__(strip=False, **kwargs)

    def validate(self, value):
        super().validate(value)
        if value and not re.fullmatch(SUBJECT_ID_PATTERN, value):
            raise forms.ValidationError(
                f"must be 1 to {SUBJECT_ID_MAX_LENGTH} characters of A-Z, a-z, 0-9, '_.:-'"
            )


@extend_schema_field(SUBJECT_ID_SCHEMA)
class SubjectIdFilter(django_filters.CharFilter):
    field_class = SubjectIdField


class EventTypeField(forms.CharField):
    def __init__(self, **kwargs):
        super().__init__(
            strip=False,
            max_length=TYPE_MAX_LENGTH,
            error_messages={"max_length": f"must be at most {TYPE_MAX_LENGTH} characters"},
            **kwargs,
        )

    def validate(self, value):
        super().validate(value)
        if "*" in value[:-1]:
            raise forms.ValidationError("may hold one '*', as its last character only")


@extend_schema_field(TYPE_SCHEMA)
class EventTypeFilter(django_filters.CharFilter):
    field_class = EventTypeField

    def filter(self, qs, value):
        if value.endswith("*"):
            return qs.filter(type__startswith=value[:-1]) if value != "*" else qs
        return super().filter(qs, value)


class EventFilter(django_filters.FilterSet):
    type = EventTypeFilter()  # described by TYPE_SCHEMA
    subject_type = SubjectTypeFilter(
        choices=[(name, name) for name in sorted(SUBJECT_TYPES)],
        error_messages={"invalid_choice": f"must be one of {', '.join(sorted(SUBJECT_TYPES))}"},
    )  # described by SUBJECT_TYPE_SCHEMA
    subject_id = SubjectIdFilter()  # described by SUBJECT_ID_SCHEMA

    class Meta:
        form = EventFilterForm
