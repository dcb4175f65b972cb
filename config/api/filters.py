"""The form every list's FilterSet validates its query parameters with (django-filter)."""

from django import forms


class NonEmptyParametersForm(forms.Form):
    """django-filter reads `?status=` as "no filter"; the schemas say "" is not a value of any
    of the parameters, so a parameter sent empty is refused instead (`empty_message`)."""

    empty_message = "must not be empty"

    def clean(self):
        for name in self.fields:
            if self.data.get(name) == "":
                self.add_error(name, self.empty_message)
        return super().clean()
