"""The v1 coupon resource (spec "Coupon (v1)") and its request contract
(docs/design.md "Coupons (v1)").

`CouponSerializer` declares the fields and renders them; `CouponWriteSerializer` holds every
field rule of a request body. Values are taken as JSON gives them: a string where an integer
belongs, a float or a boolean is a 422 on that field, never a coercion and never a 500. The
rules that need the database (live code uniqueness, the merged state under the row lock) are in
coupons/services.py.
"""

import re
from datetime import MAXYEAR, UTC, datetime
from decimal import Decimal, InvalidOperation

from django.core.validators import RegexValidator
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import (
    PolymorphicProxySerializer,
    extend_schema_field,
    extend_schema_serializer,
)
from rest_framework import serializers

from config.api.fields import (
    LengthFirstChoiceField,
    LengthFirstMixin,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
)
from config.api.schema import response_example
from coupons.models import (
    COUPON_DEFAULTS,
    MAX_INTEGER,
    MONEY_MAX,
    PERCENTAGE_MAX_DISCOUNT,
    SUBSCRIPTION_PAYMENTS_MAX,
    SUBSCRIPTION_PAYMENTS_RULE,
    TARGET_FIELDS,
    TIED_FIELDS,
    Coupon,
    coupon_rule_errors,
    coupon_settle,
)
from coupons.selectors import CouponRow

REQUIRED = "is required"
CODE_MAX_LENGTH = Coupon._meta.get_field("code").max_length
CODE_RULE = f"must be 1 to {CODE_MAX_LENGTH} characters of A-Z, a-z, 0-9, '_' and '-'"
# \A and \Z: a whole-string match ("$" would let a trailing newline through); drf-spectacular
# states them as ^ and $ in the schema's pattern.
CODE_PATTERN = rf"\A[A-Za-z0-9_-]{{1,{CODE_MAX_LENGTH}}}\Z"
TYPE_RULE = "must be PERCENTAGE or AMOUNT"
APPLIES_TO_RULE = "must be one_time or subscriptions"
# A numeric string as the SDK sends one: digits, then at most two decimals; no sign, exponent,
# spaces or separators.
AMOUNT_PATTERN = r"^[0-9]{1,10}(\.[0-9]{1,2})?$"
PRODUCT_IDS_MAX = 100
MAX_ID = 2**63 - 1
# The last whole second of year 9999 in UTC. "9999-12-31T23:59:59-01:00" is year 10000 in UTC:
# PostgreSQL would store it, but no Python datetime (so no read of the row) could hold it.
LATEST_EXPIRES_AT = datetime(MAXYEAR, 12, 31, 23, 59, 59, tzinfo=UTC)


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


# The item of the paginated list (GET /api/v1/coupons builds its page example from it).
@extend_schema_serializer(examples=[response_example("Coupon", COUPON_EXAMPLE)])
class CouponSerializer(serializers.ModelSerializer):
    """The coupon: integer ids, every field present (null where unset), amounts as quoted
    numeric strings with two decimals, UTC `Z` times. Bare on v1, in `data` on v2."""

    store_id = serializers.IntegerField(read_only=True)

    class Meta:
        model = Coupon
        # Request order first: a body's errors are listed (and `param` chosen) in this order.
        fields = [
            "id",
            "code",
            "type",
            "discount",
            "store_wide",
            "limit",
            "minimum_amount",
            "expires_at",
            "maximum_discount_amount",
            "applies_to",
            "subscription_payments",
            "products",
            "product_variants",
            "created_at",
            "updated_at",
            "store_id",
            "deleted_at",
        ]
        read_only_fields = fields

    def to_representation(self, coupon: Coupon | CouponRow) -> dict:
        # Built by hand for list throughput: DRF's per-field rendering is the largest cost of a
        # coupon list (docs/benchmarks/coupons.md, "Rendering"). The fields declared above stay
        # the declaration (schema and validation), and
        # tests/coupons/test_coupon_api.py::test_fast_representation_matches_the_declared_drf_fields
        # compares both renderings.
        return {
            "id": coupon.id,
            "code": coupon.code,
            "type": coupon.type,
            "discount": amount(coupon.discount),
            "limit": coupon.limit,
            "store_wide": coupon.store_wide,
            "minimum_amount": amount(coupon.minimum_amount),
            "expires_at": utc_timestamp(coupon.expires_at),
            "maximum_discount_amount": amount(coupon.maximum_discount_amount),
            "applies_to": coupon.applies_to,
            "subscription_payments": coupon.subscription_payments,
            "products": coupon.products,
            "product_variants": coupon.product_variants,
            "created_at": utc_timestamp(coupon.created_at),
            "updated_at": utc_timestamp(coupon.updated_at),
            "store_id": coupon.store_id,
            "deleted_at": utc_timestamp(coupon.deleted_at),
        }


def amount(value: Decimal | None) -> str | None:
    """A numeric(12,2) as the quoted string DRF's DecimalField renders: "25.00"."""
    return None if value is None else f"{value:.2f}"


def utc_timestamp(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with `Z`, as DRF's DateTimeField renders it."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _messages(rule: str) -> dict[str, str]:
    """One message per field: its rule, whatever DRF's reason for refusing the value."""
    reasons = [
        "invalid",
        "null",
        "blank",
        "min_value",
        "max_value",
        "max_length",
        "min_length",
        "max_string_length",
        "invalid_choice",
        "not_a_string",
    ]
    return {"required": REQUIRED, **dict.fromkeys(reasons, rule)}


def _integer(minimum: int, maximum: int = MAX_INTEGER, **kwargs) -> StrictIntegerField:
    rule = f"must be an integer between {minimum} and {maximum}"
    if kwargs.get("allow_null"):
        rule += " or null"
    return StrictIntegerField(
        min_value=minimum, max_value=maximum, error_messages=_messages(rule), **kwargs
    )


def _type(choices) -> LengthFirstChoiceField:
    # Not coerced: ChoiceField compares str(value) with the choices, and no non-string JSON
    # value prints as PERCENTAGE or AMOUNT.
    return LengthFirstChoiceField(choices=choices, error_messages=_messages(TYPE_RULE))


class ExpiresAtField(LengthFirstMixin, serializers.DateTimeField):
    """ISO 8601 with a time zone, in the future, at most 9999-12-31T23:59:59Z in UTC; stored in
    UTC. DRF's DateTimeField would give a naive value the server's zone. Its length is checked
    first (config/api/fields.py): the longest timestamp is 32 characters
    (9999-12-31T23:59:59.999999+00:00), padded with the spaces the parse strips."""

    def input_length_limit(self) -> int:
        return 64

    def length_failure(self, data: str, limit: int):
        self.fail("invalid")  # not a timestamp: the one message of a malformed one

    default_error_messages = {
        "invalid": "must be an ISO 8601 timestamp with a time zone, e.g. 2030-01-31T23:59:59Z, "
        "or null",
        "past": "must be in the future",
        "beyond": "must be at most 9999-12-31T23:59:59Z once converted to UTC",
    }

    def to_internal_value(self, value) -> datetime:
        parsed = None
        if isinstance(value, str):
            try:
                parsed = parse_datetime(value.strip())
            except ValueError:
                parsed = None
        if parsed is None or parsed.tzinfo is None:
            self.fail("invalid")
        try:
            in_utc = parsed.astimezone(UTC)
        except OverflowError:
            # Only year 1 or year 9999 with an offset can leave datetime's range; year 1 is past.
            self.fail("past" if parsed.year < MAXYEAR else "beyond")
        if in_utc > LATEST_EXPIRES_AT:
            self.fail("beyond")
        if in_utc <= timezone.now():
            self.fail("past")
        return in_utc


class AmountField(serializers.Field):
    """Dollars with at most two decimals, as a JSON number or a numeric string (the SDK sends
    either); a boolean, an exponent or a third decimal is refused, never rounded."""

    def __init__(
        self,
        *,
        minimum: Decimal,
        maximum: Decimal = MONEY_MAX,
        nullable: bool = False,
        **kwargs,
    ):
        self.minimum, self.maximum, self.nullable = minimum, maximum, nullable
        rule = (
            f"must be a number or a numeric string between {minimum} and {maximum}, with at most "
            "two decimals"
        )
        if nullable:
            rule += ", or null"
        kwargs["error_messages"] = _messages(rule)
        super().__init__(**kwargs)
        # The schema of this instance (as django-filter fields are annotated one by one in
        # coupons/filters.py). Null belongs to the number variant: OpenAPI 3.0's `nullable`
        # needs a `type` beside it, and a oneOf has none.
        number = {"type": "number", "minimum": float(minimum), "maximum": float(maximum)}
        if nullable:
            number["nullable"] = True
        extend_schema_field(
            {
                "oneOf": [
                    number,
                    {"type": "string", "pattern": AMOUNT_PATTERN, "maxLength": 13},
                ]
            }
        )(self)

    def validate_empty_values(self, data):
        # Null is this field's own `nullable`, not DRF's allow_null (which would also have the
        # schema say `nullable` beside the oneOf).
        if data is None and self.nullable:
            return True, None
        return super().validate_empty_values(data)

    def to_internal_value(self, data) -> Decimal:
        if isinstance(data, str) and re.fullmatch(AMOUNT_PATTERN, data):
            amount = Decimal(data)
        elif isinstance(data, int | float) and not isinstance(data, bool):
            try:
                amount = Decimal(repr(data)) if isinstance(data, float) else Decimal(data)
            except InvalidOperation:
                self.fail("invalid")
            if not amount.is_finite() or amount.as_tuple().exponent < -2:
                self.fail("invalid")
        else:
            self.fail("invalid")
        if not self.minimum <= amount <= self.maximum:
            self.fail("invalid")
        return amount.quantize(Decimal("0.01"))

    def to_representation(self, value):
        return None if value is None else f"{value:.2f}"


class ProductIdsField(serializers.ListField):
    """At most PRODUCT_IDS_MAX distinct positive integer ids."""

    def __init__(self, **kwargs):
        rule = f"must be a list of at most {PRODUCT_IDS_MAX} distinct integer ids from 1"
        super().__init__(
            child=StrictIntegerField(min_value=1, max_value=MAX_ID, error_messages=_messages(rule)),
            max_length=PRODUCT_IDS_MAX,
            error_messages=_messages(rule) | {"not_a_list": rule},
            **kwargs,
        )
        self._rule = rule

    def to_internal_value(self, data) -> list[int]:
        ids = super().to_internal_value(data)
        if len(set(ids)) != len(ids):
            raise serializers.ValidationError(self._rule)
        return ids

    def run_child_validation(self, data):
        # One message for the field, not one per bad item (keyed by index).
        try:
            return super().run_child_validation(data)
        except serializers.ValidationError:
            raise serializers.ValidationError(self._rule) from None


class CodeField(StrictCharField):
    """Its pattern states the length too, so a code over 64 characters broke both validators
    with the same rule: one message per rule (issue 23). max_length stays for the schema."""

    def run_validators(self, value):
        try:
            super().run_validators(value)
        except serializers.ValidationError as error:
            # By text: the two details carry different codes (max_length, invalid).
            messages = list(dict.fromkeys(map(str, error.detail)))
            raise serializers.ValidationError(messages) from None


class CouponWriteSerializer(CouponSerializer):
    """A create or PATCH body: each writable field with its rule; other keys (id, store_id,
    timestamps, unknown ones) are ignored. PATCH (`partial=True`) checks the merged coupon."""

    code = CodeField(
        max_length=CODE_MAX_LENGTH,
        trim_whitespace=False,
        validators=[RegexValidator(CODE_PATTERN, message=CODE_RULE)],
        error_messages=_messages(CODE_RULE),
    )
    type = _type(Coupon.TYPE_CHOICES)
    discount = AmountField(
        minimum=Decimal(1),
        help_text="1 to 100 for PERCENTAGE (below 100 for a subscriptions coupon); dollars for "
        "AMOUNT. Returned as a string with two decimals.",
    )
    store_wide = StrictBooleanField(error_messages=_messages("must be true or false"))
    limit = _integer(1, required=False, allow_null=True)
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
    applies_to = serializers.ChoiceField(
        choices=Coupon.APPLIES_TO_CHOICES,
        required=False,
        error_messages=_messages(APPLIES_TO_RULE),
        help_text="one_time (the default) or subscriptions.",
    )
    subscription_payments = StrictIntegerField(
        min_value=1,
        max_value=SUBSCRIPTION_PAYMENTS_MAX,
        required=False,
        allow_null=True,
        error_messages=_messages(SUBSCRIPTION_PAYMENTS_RULE),
        help_text="How many payments a subscriptions coupon discounts (the signup payment "
        "first); required with subscriptions, stored as null for one_time.",
    )
    products = ProductIdsField(
        required=False,
        help_text="Ids of the store's products; store_wide false needs at least one product or "
        "variant. Kept as references (docs/decisions/coupons.md).",
    )
    product_variants = ProductIdsField(required=False, help_text="Ids of product variants.")

    def validate(self, attrs: dict) -> dict:
        # PATCH merges over the stored coupon (switching `type` to PERCENTAGE over a stored
        # discount of 150 is refused on `discount`); create and PUT over COUPON_DEFAULTS.
        if self.partial and self.instance is not None:
            base = {name: getattr(self.instance, name) for name in TIED_FIELDS}
        else:
            base = COUPON_DEFAULTS
        state = coupon_settle({**base, **attrs})
        targets = not self.partial or any(name in attrs for name in TARGET_FIELDS)
        if errors := coupon_rule_errors(state, targets=targets):
            raise serializers.ValidationError(errors)
        return attrs


class CouponPercentageSerializer(CouponWriteSerializer):
    type = _type([Coupon.TYPE_PERCENTAGE])
    discount = AmountField(
        minimum=Decimal(1), maximum=Decimal(PERCENTAGE_MAX_DISCOUNT), help_text="A percentage."
    )


class CouponAmountSerializer(CouponWriteSerializer):
    type = _type([Coupon.TYPE_AMOUNT])
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
