"""The v1 coupon resource (spec "Coupon (v1)") and its request contract
(docs/design.md "Coupons (v1)").

`CouponSerializer` declares the fields and renders them; `CouponWriteSerializer` holds every
field rule of a request body. Values are taken as JSON gives them: a string where an integer
belongs, a float or a boolean is a 422 on that field, never a coercion and never a 500. The
rules that need the database (live code uniqueness, the merged state under the row lock) are in
coupons/services.py.
"""

from datetime import UTC, datetime
from decimal import Decimal

from django.core.validators import RegexValidator
from drf_spectacular.utils import (
    PolymorphicProxySerializer,
    extend_schema_serializer,
)
from rest_framework import serializers

from core.api.fields import (
    LengthFirstChoiceField,
    StrictBooleanField,
    StrictIntegerField,
)
from core.api.schema import response_example
from coupons.fields import (
    APPLIES_TO_RULE,
    CODE_MAX_LENGTH,
    CODE_PATTERN,
    CODE_RULE,
    REQUIRED,
    AmountField,
    CodeField,
    ExpiresAtField,
    ProductIdsField,
    integer_field,
    messages_for,
    type_field,
)
from coupons.models import (
    COUPON_API_FIELDS,
    COUPON_DEFAULTS,
    PERCENTAGE_MAX_DISCOUNT,
    SUBSCRIPTION_PAYMENTS_MAX,
    SUBSCRIPTION_PAYMENTS_RULE,
    TIED_FIELDS,
    Coupon,
    coupon_rule_errors,
    coupon_settle,
)
from coupons.selectors import LISTED_AMOUNTS, LISTED_TIMESTAMPS

# OpenAPI examples (spec "Coupon (v1)"), also used by coupons/views.py.
COUPON_EXAMPLE = {
    "id": 42,
    "code": "SUMMER25",
    "type": "PERCENTAGE",
    "discount": "25.00",
    "store_wide": True,
    "limit": 100,
    "minimum_amount": "50.00",
    "expires_at": "2030-09-01T00:00:00Z",
    "maximum_discount_amount": "40.00",
    "applies_to": "one_time",
    "subscription_payments": None,
    "products": [],
    "product_variants": [],
    "created_at": "2026-06-01T09:30:00Z",
    "updated_at": "2026-06-01T09:30:00Z",
    "store_id": 7,
    "deleted_at": None,
}
# The request that creates COUPON_EXAMPLE: its writable fields.
COUPON_CREATE_EXAMPLE = {
    name: COUPON_EXAMPLE[name]
    for name in (
        "code",
        "type",
        "discount",
        "store_wide",
        "limit",
        "minimum_amount",
        "expires_at",
        "maximum_discount_amount",
    )
}
COUPON_CREATE_EXAMPLE["discount"] = 25
COUPON_CREATE_EXAMPLE["minimum_amount"] = "50"
COUPON_AMOUNT_CREATE_EXAMPLE = {
    "code": "TENOFF",
    "type": "AMOUNT",
    "discount": "9.99",
    "store_wide": False,
    "products": [1201, 1202],
    "applies_to": "subscriptions",
    "subscription_payments": 3,
}
COUPON_UPDATE_EXAMPLE = {"discount": 30, "expires_at": "2030-12-31T23:59:59Z"}
COUPON_UPDATED_EXAMPLE = {
    **COUPON_EXAMPLE,
    "discount": "30.00",
    "expires_at": "2030-12-31T23:59:59Z",
}


# The response's keys: the coupon's API fields (coupons/models.py).
RESPONSE_FIELDS = COUPON_API_FIELDS


# The item of the paginated list (GET /api/v1/coupons builds its page example from it).
@extend_schema_serializer(examples=[response_example("Coupon", COUPON_EXAMPLE)])
class CouponSerializer(serializers.ModelSerializer):
    """The coupon: integer ids, every field present (null where unset), amounts as quoted
    numeric strings with two decimals, UTC `Z` times. Bare on v1, in `data` on v2."""

    store_id = serializers.IntegerField(read_only=True)

    class Meta:
        model = Coupon
        fields = RESPONSE_FIELDS
        read_only_fields = fields

    def to_representation(self, coupon: Coupon | dict) -> dict:
        # Built by hand for list throughput: DRF's per-field rendering is the largest cost of a
        # coupon list (docs/benchmarks/coupons.md, "Rendering"). The fields declared above stay
        # the declaration (schema and validation), and
        # tests/coupons/test_coupon_api.py::test_fast_representation_matches_the_declared_drf_fields
        # compares both renderings.
        if isinstance(coupon, dict):
            # A listed coupon (coupons/selectors.py `coupon_listing`): its values, timestamps
            # and amounts already rendered by PostgreSQL.
            return {name: coupon[key] for name, key in LISTED_KEYS}
        representation = {name: getattr(coupon, name) for name in RESPONSE_FIELDS}
        for name in LISTED_TIMESTAMPS:
            representation[name] = utc_timestamp(representation[name])
        for name in LISTED_AMOUNTS:
            representation[name] = amount(representation[name])
        return representation


# Each one's key in a listed coupon's dict.
LISTED_KEYS = [
    (name, LISTED_TIMESTAMPS.get(name) or LISTED_AMOUNTS.get(name) or name)
    for name in RESPONSE_FIELDS
]


def amount(value: Decimal | None) -> str | None:
    """A numeric(12,2) as the quoted string DRF's DecimalField renders: "25.00"."""
    return None if value is None else f"{value:.2f}"


def utc_timestamp(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with `Z`, as DRF's DateTimeField renders it."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


class CouponWriteSerializer(CouponSerializer):
    """A create or PATCH body: each writable field with its rule; other keys (id, store_id,
    timestamps, unknown ones) are ignored. PATCH (`partial=True`) checks the merged coupon."""

    code = CodeField(
        max_length=CODE_MAX_LENGTH,
        trim_whitespace=False,
        validators=[RegexValidator(CODE_PATTERN, message=CODE_RULE)],
        error_messages=messages_for(CODE_RULE),
    )
    type = type_field(Coupon.TYPE_CHOICES)
    discount = AmountField(
        minimum=Decimal(1),
        help_text="1 to 100 for PERCENTAGE (below 100 for a subscriptions coupon); dollars for "
        "AMOUNT. Returned as a string with two decimals.",
    )
    store_wide = StrictBooleanField(error_messages=messages_for("must be true or false"))
    limit = integer_field(1, required=False, allow_null=True)
    minimum_amount = AmountField(
        minimum=Decimal(0), required=False, nullable=True, help_text="Dollars."
    )
    expires_at = ExpiresAtField(
        required=False,
        allow_null=True,
        error_messages={"required": REQUIRED},
        help_text="ISO 8601 with a time zone (`Z` or `±hh:mm`), in the future and at most "
        "9999-12-31T23:59:59Z once converted to UTC (so 9999-12-31T23:59:59-01:00 is refused); "
        "stored and returned in UTC.",
    )
    maximum_discount_amount = AmountField(
        minimum=Decimal("0.01"),
        required=False,
        nullable=True,
        help_text="The most a PERCENTAGE coupon takes off, in dollars; null (no cap) for AMOUNT.",
    )
    applies_to = LengthFirstChoiceField(
        choices=Coupon.APPLIES_TO_CHOICES,
        required=False,
        error_messages=messages_for(APPLIES_TO_RULE),
        help_text="one_time (the default) or subscriptions.",
    )
    subscription_payments = StrictIntegerField(
        min_value=1,
        max_value=SUBSCRIPTION_PAYMENTS_MAX,
        required=False,
        allow_null=True,
        error_messages=messages_for(SUBSCRIPTION_PAYMENTS_RULE),
        help_text="How many payments a subscriptions coupon discounts (the signup payment "
        "first); required with subscriptions, stored as null for one_time.",
    )
    products = ProductIdsField(
        required=False,
        help_text="Ids of the store's products the coupon applies to when store_wide is false "
        "(none until set). Kept as references (docs/decisions/coupons.md).",
    )
    product_variants = ProductIdsField(required=False, help_text="Ids of product variants.")

    def get_fields(self) -> dict:
        # Required fields first, then the others in the coupon's order: the spec's POST row, the
        # order a body's errors are listed in (and `param` chosen from).
        fields = super().get_fields()
        return dict(sorted(fields.items(), key=lambda item: not item[1].required))

    def validate(self, attrs: dict) -> dict:
        # PATCH merges over the stored coupon (switching `type` to PERCENTAGE over a stored
        # discount of 150 is refused on `discount`); create and PUT over COUPON_DEFAULTS.
        if self.partial and self.instance is not None:
            base = {name: getattr(self.instance, name) for name in TIED_FIELDS}
        else:
            base = COUPON_DEFAULTS
        state = coupon_settle({**base, **attrs})
        if errors := coupon_rule_errors(state):
            raise serializers.ValidationError(errors)
        return attrs


class CouponPercentageSerializer(CouponWriteSerializer):
    type = type_field([Coupon.TYPE_PERCENTAGE])
    discount = AmountField(
        minimum=Decimal(1), maximum=Decimal(PERCENTAGE_MAX_DISCOUNT), help_text="A percentage."
    )


class CouponAmountSerializer(CouponWriteSerializer):
    type = type_field([Coupon.TYPE_AMOUNT])
    discount = AmountField(minimum=Decimal(1), help_text="Dollars.")


# The create body as the schema states it: the discount range depends on the type. Requests
# are validated by CouponWriteSerializer, whose validate() applies the same bound.
CouponCreateRequest = PolymorphicProxySerializer(
    component_name="CouponCreate",
    serializers={
        Coupon.TYPE_PERCENTAGE: CouponPercentageSerializer,
        Coupon.TYPE_AMOUNT: CouponAmountSerializer,
    },
    resource_type_field_name="type",
)
