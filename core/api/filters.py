"""The forms every list's FilterSet validates its query parameters with (django-filter)."""

from django import forms

from core.api.fields import DEFAULT_MAX_LENGTH_MESSAGE, PARAMETER_MAX_LENGTH


def parameter_length_limit(field: forms.Field) -> int:
    """The longest value `field` reads: its max_length, its longest choice, or the default."""
    if isinstance(field, forms.ChoiceField):
        return max((len(str(value)) for value, _ in field.choices), default=0)
    return getattr(field, "max_length", None) or PARAMETER_MAX_LENGTH


class LengthFirstForm(forms.Form):
    """Query parameters checked for length before any other rule (core/api/fields.py): a value
    longer than its field reads is taken out of the data before the fields see it, and refused
    in `clean` with its length as its only error (a choice field would otherwise echo it)."""

    def __init__(self, data=None, *args, **kwargs):
        self.overlong: dict[str, int] = {}
        if data is not None:
            for name, field in self.base_fields.items():
                limit = parameter_length_limit(field)
                values = data.getlist(name) if hasattr(data, "getlist") else [data.get(name)]
                if any(isinstance(value, str) and len(value) > limit for value in values):
                    self.overlong[name] = limit
            if self.overlong:
                data = data.copy()
                for name in self.overlong:
                    data.pop(name)
        super().__init__(data, *args, **kwargs)

    def clean(self):
        for name, limit in self.overlong.items():
            self.add_error(name, DEFAULT_MAX_LENGTH_MESSAGE.format(max_length=limit))
        return super().clean()


class NonEmptyParametersForm(LengthFirstForm):
    """django-filter reads `?status=` as "no filter"; the schemas say "" is not a value of any
    of the parameters, so a parameter sent empty is refused instead (`empty_message`)."""

    empty_message = "must not be empty"

    def clean(self):
        for name in self.fields:
            if self.data.get(name) == "":
                self.add_error(name, self.empty_message)
        return super().clean()
