"""Query filters of GET /api/v1/coupons (django-filter)."""

import django_filters
from django import forms

from config.api.errors import ValidationFailed
from coupons.models import Coupon
from coupons.selectors import (
    TRASHED_ONLY,
    TRASHED_WITH,
    TRASHED_WITHOUT,
    coupon_list_filter_trashed,
)

BOOLEAN_VALUES = {"true": True, "1": True, "false": False, "0": False}


class StrictBooleanField(forms.Field):
    """Exactly `true`, `false`, `1` or `0`; anything else (also `yes`, `TRUE`, empty) is invalid."""

    def to_python(self, value):
        if value is None:
            return None
        if value not in BOOLEAN_VALUES:
            raise forms.ValidationError("must be true, false, 1 or 0")
        return BOOLEAN_VALUES[value]

    def validate(self, value):
        pass


class StrictBooleanFilter(django_filters.Filter):
    field_class = StrictBooleanField


class CouponListFilter(django_filters.FilterSet):
    """`only_trashed=true` lists deleted coupons only (whatever `with_trashed` says);
    `with_trashed=true` lists live and deleted ones; otherwise live ones only."""

    with_trashed = StrictBooleanFilter()
    only_trashed = StrictBooleanFilter()

    class Meta:
        model = Coupon
        fields = ["with_trashed", "only_trashed"]

    def filter_queryset(self, queryset):
        return coupon_list_filter_trashed(queryset, self.trashed())

    def trashed(self) -> str:
        """`without`, `with` or `only`; 422 naming each malformed parameter."""
        if not self.is_valid():
            raise ValidationFailed(
                {name: [str(m) for m in messages] for name, messages in self.errors.items()}
            )
        if self.form.cleaned_data.get("only_trashed"):
            return TRASHED_ONLY
        if self.form.cleaned_data.get("with_trashed"):
            return TRASHED_WITH
        return TRASHED_WITHOUT
