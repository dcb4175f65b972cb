"""The field classes of a coupon request body (coupons/serializers.py): each takes a value as
JSON gives it, one rule and one message per field, never a coercion and never a 500."""

import re
from datetime import MAXYEAR, UTC, datetime
from decimal import Decimal, InvalidOperation

from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.api.fields import (
    LengthFirstChoiceField,
    LengthFirstMixin,
    StrictCharField,
    StrictIntegerField,
)
from coupons.models import MAX_INTEGER, MONEY_MAX, Coupon

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


def messages_for(rule: str) -> dict[str, str]:
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


def integer_field(minimum: int, maximum: int = MAX_INTEGER, **kwargs) -> StrictIntegerField:
    rule = f"must be an integer between {minimum} and {maximum}"
    if kwargs.get("allow_null"):
        rule += " or null"
    return StrictIntegerField(
        min_value=minimum, max_value=maximum, error_messages=messages_for(rule), **kwargs
    )


def type_field(choices) -> LengthFirstChoiceField:
    # Not coerced: ChoiceField compares str(value) with the choices, and no non-string JSON
    # value prints as PERCENTAGE or AMOUNT.
    return LengthFirstChoiceField(choices=choices, error_messages=messages_for(TYPE_RULE))


class ExpiresAtField(LengthFirstMixin, serializers.DateTimeField):
    """ISO 8601 with a time zone, in the future, at most 9999-12-31T23:59:59Z in UTC; stored in
    UTC. DRF's DateTimeField would give a naive value the server's zone. Its length is checked
    first (core/api/fields.py): the longest timestamp is 32 characters
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
        kwargs["error_messages"] = messages_for(rule)
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
            child=StrictIntegerField(
                min_value=1, max_value=MAX_ID, error_messages=messages_for(rule)
            ),
            max_length=PRODUCT_IDS_MAX,
            error_messages=messages_for(rule) | {"not_a_list": rule},
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
    """Its pattern states the length too, so a code over CODE_MAX_LENGTH characters would break
    both validators with the same rule: one message per rule. max_length stays for the schema."""

    def run_validators(self, value):
        try:
            super().run_validators(value)
        except serializers.ValidationError as error:
            # By text: the two details carry different codes (max_length, invalid).
            messages = list(dict.fromkeys(map(str, error.detail)))
            raise serializers.ValidationError(messages) from None
