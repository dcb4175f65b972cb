"""Query filters of GET /api/v1/coupons (django-filter, through DjangoFilterBackend).

A malformed value fails the FilterSet's form; DjangoFilterBackend raises it as a DRF
ValidationError, which the one exception handler answers as a 422 naming each parameter.
"""

import copy

import django_filters
from django import forms
from drf_spectacular.utils import extend_schema_field

from core.api.filters import LengthFirstForm
from coupons.models import Coupon
from coupons.selectors import (
    TRASHED_ONLY,
    TRASHED_WITH,
    TRASHED_WITHOUT,
    coupon_listing,
)

BOOLEAN_VALUES = {"true": True, "1": True, "false": False, "0": False}
BOOLEAN_RULE = "must be true, false, 1 or 0"


class StrictBooleanField(forms.Field):
    """Exactly `true`, `false`, `1` or `0`; anything else (also `yes`, `TRUE`, empty) is invalid."""

    def to_python(self, value):
        if value is None:
            return None
        if value not in BOOLEAN_VALUES:
            raise forms.ValidationError(BOOLEAN_RULE)
        return BOOLEAN_VALUES[value]

    def validate(self, value):
        pass


class StrictBooleanFilter(django_filters.Filter):
    """The schema states the accepted values as an enum (a `boolean` parameter would let
    clients send `True` or `yes`, which are refused)."""

    field_class = StrictBooleanField

    def __init__(self, *, description: str, **kwargs):
        super().__init__(**kwargs)
        # drf-spectacular takes an annotated filter's whole parameter schema, description
        # included, from its annotation; a single coupon's read states it as a parameter.
        self.parameter_schema = {
            "type": "string",
            "enum": list(BOOLEAN_VALUES),
            "description": f"{description} Exactly true, false, 1 or 0; anything else is a 422.",
        }
        extend_schema_field(self.parameter_schema)(self)

    def __deepcopy__(self, memo):
        # Each FilterSet (each list request) copies its filters; deep copies, of the schema
        # annotation above mostly, were two thirds of building one. A copy gets its own
        # `parent` and `model`, each form deep-copies `field`, nothing else changes.
        return copy.copy(self)


class CouponListFilter(django_filters.FilterSet):
    """`only_trashed=true` lists deleted coupons only (whatever `with_trashed` says);
    `with_trashed=true` lists live and deleted ones; otherwise live ones only."""

    with_trashed = StrictBooleanFilter(description="Include deleted coupons.")
    only_trashed = StrictBooleanFilter(description="Only deleted coupons (wins over with_trashed).")

    class Meta:
        model = Coupon
        fields = ["with_trashed", "only_trashed"]
        form = LengthFirstForm

    # Without either parameter there is nothing to check, and the form (django-filter builds
    # its class per request) is not built: work the common list, without either, never needs
    # (docs/benchmarks/coupons.md).
    def is_valid(self) -> bool:
        return not self._asked() or super().is_valid()

    @property
    def errors(self):
        return super().errors if self._asked() else {}

    def _asked(self) -> bool:
        return any(name in self.data for name in self.filters)

    def filter_queryset(self, queryset):
        # The two parameters decide together, so they filter here rather than one by one.
        return coupon_listing(queryset, store=self.request.store, trashed=self.trashed())

    def trashed(self) -> str:
        """`without`, `with` or `only`, from a valid form."""
        if not self._asked():
            return TRASHED_WITHOUT
        if self.form.cleaned_data.get("only_trashed"):
            return TRASHED_ONLY
        if self.form.cleaned_data.get("with_trashed"):
            return TRASHED_WITH
        return TRASHED_WITHOUT
