"""What a coupon search may compare a field with: each value read as its column's type and
refused at that type's edges, which PostgreSQL would answer with an error (coupons/search.py
builds the conditions). A field of a type not known here is refused at import."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.models import BooleanField, CharField, DateTimeField, DecimalField, Model, TextField
from django.utils.dateparse import parse_datetime

MAX_TEXT = 255


class Refused(Exception):
    """A value its field cannot take: the message of the 422."""


# A value is read as its column's type and refused at that type's edges, which PostgreSQL
# would answer with an error: the range of each integer column type, a UTC offset beyond
# timestamptz's (+-15:59), a year past 9999 once in UTC (no Python datetime reads it back).
INTEGER_BITS = {"smallint": 16, "integer": 32, "bigint": 64}
LARGEST_OFFSET = timedelta(hours=15, minutes=59, seconds=59)
NUMBER_TEXT = 40  # characters of a numeric string


def text_value(value: Any) -> str:
    if not isinstance(value, str):
        raise Refused("must be a string")
    if len(value) > MAX_TEXT:
        raise Refused(f"must be at most {MAX_TEXT} characters")
    if "\x00" in value:
        raise Refused("must not contain NUL")
    return value


def _integer(bits: int) -> Callable[[Any], int]:
    lowest, highest = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    rule = f"must be an integer between {lowest} and {highest}"

    def read(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise Refused(rule)
        if not lowest <= value <= highest:
            raise Refused(rule)
        return value

    return read


def _decimal(digits: int, places: int) -> Callable[[Any], Decimal]:
    """A number the column `numeric(digits, places)` can hold; more decimals are refused, as
    the writes refuse them, rather than rounded."""
    highest = Decimal(10) ** (digits - places) - Decimal(10) ** -places
    rule = (
        f"must be a number or a numeric string between -{highest} and {highest}, with at most "
        f"{places} decimals"
    )

    def read(value: Any) -> Decimal:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise Refused(rule)
        if isinstance(value, str) and len(value) > NUMBER_TEXT:
            raise Refused(rule)
        try:
            number = Decimal(str(value))
        except InvalidOperation:
            raise Refused(rule) from None
        if not number.is_finite() or abs(number) > highest:
            raise Refused(rule)
        if number.normalize().as_tuple().exponent < -places:
            raise Refused(rule)
        return number

    return read


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Refused("must be true or false")
    return value


def _timestamp(value: Any) -> datetime:
    """An ISO 8601 timestamp with a time zone, in UTC."""
    text = text_value(value)
    try:
        parsed = parse_datetime(text.strip())
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise Refused("must be an ISO 8601 timestamp with a time zone, e.g. 2030-01-31T23:59:59Z")
    if abs(parsed.utcoffset()) > LARGEST_OFFSET:
        raise Refused("must have a UTC offset between -15:59 and +15:59")
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise Refused("must be within the years 1 to 9999 once converted to UTC") from None


@dataclass(frozen=True)
class SearchField:
    """A field a search may name: the column it compares and how a value is read."""

    lookup: str
    read: Callable[[Any], Any]
    nullable: bool = False
    text: bool = False


def search_field(model: type[Model], name: str) -> SearchField:
    """The field `name` of `model` (an attribute name: a foreign key's `store_id`), its
    values read as its column's type: a field of a new type is refused here, at import."""
    field = model._meta.get_field(name)
    column = field.db_type(connection)
    if isinstance(field, BooleanField):
        read, text = _boolean, False
    elif isinstance(field, DateTimeField):
        read, text = _timestamp, False
    elif isinstance(field, DecimalField):
        read, text = _decimal(field.max_digits, field.decimal_places), False
    elif isinstance(field, CharField | TextField):
        read, text = text_value, True
    elif column in INTEGER_BITS:
        read, text = _integer(INTEGER_BITS[column]), False
    else:
        raise ImproperlyConfigured(f"{model.__name__}.{name} ({column}) is not searchable")
    return SearchField(name, read, nullable=field.null, text=text)
