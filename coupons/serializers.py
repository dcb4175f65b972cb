"""The v1 coupon resource (spec "Coupon (v1)") and its request contract
(docs/design.md "Coupons (v1)").

`CouponSerializer` declares the fields and renders them; `CouponWriteSerializer` holds every
field rule of a request body. Values are taken as JSON gives them: a string where an integer
belongs, a float or a boolean is a 422 on that field, never a coercion and never a 500. The
rules that need the database (live code uniqueness, the merged state under the row lock) are in
coupons/services.py.
"""

from datetime import MAXYEAR, UTC, datetime

from django.core.validators import RegexValidator
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import (
    PolymorphicProxySerializer,
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
    MAX_INTEGER,
    PERCENTAGE_DISCOUNT_RULE,
    PERCENTAGE_MAX_DISCOUNT,
    Coupon,
    discount_exceeds_type,
)
from coupons.selectors import LISTED_TIMESTAMPS

REQUIRED = "is required"
CODE_RULE = "must be 1 to 64 characters of A-Z, a-z, 0-9, '_' and '-'"
# \A and \Z: a whole-string match ("$" would let a trailing newline through); drf-spectacular
# states them as ^ and $ in the schema's pattern.
CODE_PATTERN = r"\A[A-Za-z0-9_-]{1,64}\Z"
TYPE_RULE = "must be PERCENTAGE or AMOUNT"
# The last whole second of year 9999 in UTC. "9999-12-31T23:59:59-01:00" is year 10000 in UTC:
# PostgreSQL would store it, but no Python datetime (so no read of the row) could hold it.
LATEST_EXPIRES_AT = datetime(MAXYEAR, 12, 31, 23, 59, 59, tzinfo=UTC)


# OpenAPI examples (spec "Coupon (v1)"), also used by coupons/views.py.
COUPON_EXAMPLE = {
    "id": 42,
    "code": "SUMMER25",
    "type": "PERCENTAGE",
    "discount": 25,
    "store_wide": True,
    "limit": 100,
    "minimum_amount": 50,
    "expires_at": "2030-09-01T00:00:00Z",
    "created_at": "2026-06-01T09:30:00Z",
    "updated_at": "2026-06-01T09:30:00Z",
    "store_id": 7,
    "deleted_at": None,
}
# The request that creates COUPON_EXAMPLE: its writable fields.
COUPON_CREATE_EXAMPLE = {
    name: COUPON_EXAMPLE[name]
    for name in ("code", "type", "discount", "store_wide", "limit", "minimum_amount", "expires_at")
}
COUPON_AMOUNT_CREATE_EXAMPLE = {
    "code": "TENOFF",
    "type": "AMOUNT",
    "discount": 10,
    "store_wide": True,
}
COUPON_UPDATE_EXAMPLE = {"discount": 30, "expires_at": "2030-12-31T23:59:59Z"}


# The item of the paginated list (GET /api/v1/coupons builds its page example from it).
@extend_schema_serializer(examples=[response_example("Coupon", COUPON_EXAMPLE)])
class CouponSerializer(serializers.ModelSerializer):
    """The bare v1 coupon: integer ids, every field present (null where unset), UTC `Z` times."""

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
            "created_at",
            "updated_at",
            "store_id",
            "deleted_at",
        ]
        read_only_fields = fields

    def to_representation(self, coupon: Coupon | dict) -> dict:
        # Built by hand for list throughput: DRF's per-field rendering is the largest cost of a
        # coupon list (docs/benchmarks/coupons.md, "Rendering"). The fields declared above stay
        # the declaration (schema and validation), and
        # tests/coupons/test_coupon_api.py::test_fast_representation_matches_the_declared_drf_fields
        # compares both renderings.
        if isinstance(coupon, dict):
            # A listed coupon (coupons/selectors.py `coupon_listing`): its values, timestamps
            # already rendered by PostgreSQL.
            return {name: coupon[key] for name, key in LISTED_KEYS}
        representation = {name: getattr(coupon, name) for name in RESPONSE_FIELDS}
        for name in LISTED_TIMESTAMPS:
            representation[name] = utc_timestamp(representation[name])
        return representation


# The response's fields, in its order.
RESPONSE_FIELDS = (
    "id",
    "code",
    "type",
    "discount",
    "limit",
    "store_wide",
    "minimum_amount",
    "expires_at",
    "created_at",
    "updated_at",
    "store_id",
    "deleted_at",
)
# Each one's key in a listed coupon's dict.
LISTED_KEYS = [(name, LISTED_TIMESTAMPS.get(name, name)) for name in RESPONSE_FIELDS]


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
        max_length=64,
        trim_whitespace=False,
        validators=[RegexValidator(CODE_PATTERN, message=CODE_RULE)],
        error_messages=_messages(CODE_RULE),
    )
    type = _type(Coupon.TYPE_CHOICES)
    discount = _integer(1, help_text="1 to 100 for PERCENTAGE; whole dollars for AMOUNT.")
    store_wide = StrictBooleanField(error_messages=_messages("must be true or false"))
    limit = _integer(1, required=False, allow_null=True)
    minimum_amount = _integer(0, required=False, allow_null=True, help_text="Whole dollars.")
    expires_at = ExpiresAtField(
        required=False,
        allow_null=True,
        error_messages={"required": REQUIRED},
        help_text="ISO 8601 with a time zone (`Z` or `±hh:mm`), in the future and at most "
        "9999-12-31T23:59:59Z once converted to UTC (so 9999-12-31T23:59:59-01:00 is refused); "
        "stored and returned in UTC.",
    )

    def validate(self, attrs: dict) -> dict:
        # On PATCH the stored values fill what the body leaves out: switching `type` to
        # PERCENTAGE over a stored discount of 150 is refused on `discount`.
        merged = {
            name: attrs.get(name, getattr(self.instance, name, None))
            for name in ("type", "discount")
        }
        if discount_exceeds_type(**merged):
            raise serializers.ValidationError({"discount": [PERCENTAGE_DISCOUNT_RULE]})
        return attrs


class CouponPercentageSerializer(CouponWriteSerializer):
    type = _type([Coupon.TYPE_PERCENTAGE])
    discount = _integer(1, PERCENTAGE_MAX_DISCOUNT, help_text="A percentage.")


class CouponAmountSerializer(CouponWriteSerializer):
    type = _type([Coupon.TYPE_AMOUNT])
    discount = _integer(1, help_text="Whole dollars.")


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
