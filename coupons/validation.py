"""The coupon field rules of DESIGN.md "Coupons (v1)", applied to JSON-decoded values.

Values arrive as JSON gives them: a string where an integer belongs, a float or a boolean is a
422 on that field, never a coercion and never a 500.
"""

import re
from collections.abc import Mapping
from datetime import MAXYEAR, UTC, datetime
from typing import Any

from django.utils.dateparse import parse_datetime

from config.api.errors import ValidationFailed
from coupons.models import MAX_INTEGER, Coupon

# What a client may write; anything else in a body (id, store_id, timestamps, ...) is ignored.
WRITABLE_FIELDS = (
    "code",
    "type",
    "discount",
    "store_wide",
    "limit",
    "minimum_amount",
    "expires_at",
)
REQUIRED_ON_CREATE = ("code", "type", "discount", "store_wide")
OPTIONAL_DEFAULTS = {"limit": None, "minimum_amount": None, "expires_at": None}

CODE_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
CODE_RULE = "must be 1 to 64 characters of A-Z, a-z, 0-9, '_' and '-'"
TYPES = (Coupon.TYPE_PERCENTAGE, Coupon.TYPE_AMOUNT)
# The last whole second of year 9999 in UTC. "9999-12-31T23:59:59-01:00" is year 10000 in UTC:
# PostgreSQL would store it, but no Python datetime (so no read of the row) could hold it.
LATEST_EXPIRES_AT = datetime(MAXYEAR, 12, 31, 23, 59, 59, tzinfo=UTC)
LATEST_EXPIRES_AT_RULE = "must be at most 9999-12-31T23:59:59Z once converted to UTC"


class _Invalid(Exception):
    pass


def _is_integer(value) -> bool:
    # bool is an int subclass in Python; JSON true is not an integer.
    return isinstance(value, int) and not isinstance(value, bool)


def _integer(value, *, minimum: int, nullable: bool) -> int | None:
    if value is None and nullable:
        return None
    rule = f"must be an integer between {minimum} and {MAX_INTEGER}"
    if nullable:
        rule += " or null"
    if not _is_integer(value) or not minimum <= value <= MAX_INTEGER:
        raise _Invalid(rule)
    return value


def _code(value) -> str:
    if not isinstance(value, str) or not CODE_PATTERN.fullmatch(value):
        raise _Invalid(CODE_RULE)
    return value


def _type(value) -> str:
    if value not in TYPES or not isinstance(value, str):
        raise _Invalid("must be PERCENTAGE or AMOUNT")
    return value


def _store_wide(value) -> bool:
    if not isinstance(value, bool):
        raise _Invalid("must be true or false")
    return value


def _expires_at(value, *, now: datetime) -> datetime | None:
    if value is None:
        return None
    rule = "must be an ISO 8601 timestamp with a time zone, e.g. 2030-01-31T23:59:59Z, or null"
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = parse_datetime(value.strip())
        except ValueError:
            parsed = None
    else:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise _Invalid(rule)
    try:
        in_utc = parsed.astimezone(UTC)
    except OverflowError:
        # Only year 1 or year 9999 with an offset can leave datetime's range; year 1 is past.
        past = parsed.year < MAXYEAR
        raise _Invalid("must be in the future" if past else LATEST_EXPIRES_AT_RULE) from None
    if in_utc > LATEST_EXPIRES_AT:
        raise _Invalid(LATEST_EXPIRES_AT_RULE)
    if in_utc <= now:
        raise _Invalid("must be in the future")
    return in_utc


def coupon_values_validate(
    *, given: Mapping[str, Any], current: Mapping[str, Any] | None, now: datetime
) -> dict[str, Any]:
    """The merged, checked writable values of a coupon, or ValidationFailed naming each field.

    `current` is None on create (required fields must be given) or the stored values on
    update: the merged result must satisfy every rule, so switching `type` to PERCENTAGE
    over a stored discount of 150 fails on `discount`.
    """
    given = {name: given[name] for name in WRITABLE_FIELDS if name in given}
    values = dict(OPTIONAL_DEFAULTS if current is None else current)
    errors: dict[str, list[str]] = {}
    parsers = {
        "code": _code,
        "type": _type,
        "discount": lambda v: _integer(v, minimum=1, nullable=False),
        "store_wide": _store_wide,
        "limit": lambda v: _integer(v, minimum=1, nullable=True),
        "minimum_amount": lambda v: _integer(v, minimum=0, nullable=True),
        "expires_at": lambda v: _expires_at(v, now=now),
    }
    for name in WRITABLE_FIELDS:
        if name in given:
            try:
                values[name] = parsers[name](given[name])
            except _Invalid as invalid:
                errors[name] = [str(invalid)]
        elif current is None and name in REQUIRED_ON_CREATE:
            errors[name] = ["is required"]
    if (
        "type" not in errors
        and "discount" not in errors
        and values.get("type") == Coupon.TYPE_PERCENTAGE
        and values.get("discount", 0) > 100
    ):
        errors["discount"] = ["must be between 1 and 100 for a PERCENTAGE coupon"]
    if errors:
        ordered = {name: errors[name] for name in WRITABLE_FIELDS if name in errors}
        raise ValidationFailed(ordered)
    return {name: values[name] for name in WRITABLE_FIELDS}
