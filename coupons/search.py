"""The body of POST /api/v{1,2}/coupons/search (Laravel Orion's search, which the official SDK
sends) made into one ORM condition and an ordering, or a 422 naming the part that is wrong.

    {"filters": [{"field": "type", "operator": "=", "value": "AMOUNT"},
                 {"type": "or", "nested": [{"field": "discount", "operator": ">=", "value": 50}]}],
     "search": {"value": "summer", "case_sensitive": false},
     "sort": [{"field": "expires_at", "direction": "desc"}]}

Only the fields a search names (`COUPON_FIELDS`) may be named; each value is read as its
column's type and refused at that type's edges (coupons/search_fields.py), so a condition is a plain
comparison on a column (an index serves it like the list's) that PostgreSQL never refuses.
`like` is SQL LIKE (`Like`). Filters join left to right: each one's `type` (`and`, the default,
or `or`) joins it to what precedes it, as Orion's query builder does. Bounds keep a body from
costing more than a list request: `MAX_FILTERS` conditions in all, `MAX_DEPTH` levels of
`nested`, `MAX_IN_VALUES` values in an `in`, `MAX_TEXT` characters in a string value,
`MAX_LIKE_LENGTH` characters and `MAX_LIKE_WILDCARDS` wildcards in a like pattern. What still
runs long is stopped by the request's statement timeout (core/database/connections.py).
"""

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import (
    CharField,
    DecimalField,
    Lookup,
    Q,
    TextField,
    Value,
)

from core.api.errors import ValidationFailed
from coupons.models import COUPON_API_FIELDS, COUPON_REFERENCE_FIELDS, Coupon
from coupons.search_fields import MAX_TEXT, Refused, SearchField, search_field, text_value

MAX_FILTERS = 50
MAX_DEPTH = 3
MAX_IN_VALUES = 100
MAX_SORTS = 5
# A `like` pattern: LIKE's work grows with its length and its `%`s (each can try every
# position of the rest); these keep the most a search may ask within the list's cost.
MAX_LIKE_LENGTH = 100
MAX_LIKE_WILDCARDS = 10

OPERATORS = ("=", "!=", ">", ">=", "<", "<=", "like", "not like", "in", "not in")
ORDERED = {">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}
TEXT_ONLY = {"like", "not like"}


@CharField.register_lookup
@TextField.register_lookup
class Like(Lookup):
    """`like`: SQL LIKE, case-sensitive, its `%` and `_` the wildcards and every other
    character itself, a backslash too (doubled here: it is LIKE's escape character)."""

    lookup_name = "like"

    def as_sql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} LIKE {rhs} ESCAPE '\\'", (*lhs_params, *rhs_params)

    def get_db_prep_lookup(self, value, connection):
        return "%s", [value.replace("\\", "\\\\")]


@dataclass(frozen=True)
class Search:
    """What a search body asks for: the rows' condition and their order."""

    condition: Q
    order_by: tuple[str, ...]


def search_parse(
    body: Mapping[str, Any],
    *,
    fields: Mapping[str, SearchField],
    searched_by: tuple[str, ...],
    tiebreak: str = "id",
) -> Search:
    """`body`'s filters, search term and sort over `fields`; ValidationFailed names the first
    wrong part (`filters.1.nested.0.field`, `sort.0.direction`, `search.value`)."""
    parser = _Parser(fields)
    condition = parser.filters(body.get("filters"), path="filters", depth=1)
    condition &= _search_term(body.get("search"), fields=fields, searched_by=searched_by)
    return Search(condition, _ordering(body.get("sort"), fields=fields, tiebreak=tiebreak))


def _refuse(path: str, message: str) -> ValidationFailed:
    return ValidationFailed.field(path, message)


class _Parser:
    def __init__(self, fields: Mapping[str, SearchField]):
        self.fields = fields
        self.count = 0

    def filters(self, items: Any, *, path: str, depth: int) -> Q:
        if items is None:
            return Q()
        if not isinstance(items, list):
            raise _refuse(path, "must be a list of filters")
        if depth > MAX_DEPTH:
            raise _refuse(path, f"nests deeper than {MAX_DEPTH} levels")
        joined = Q()
        for index, item in enumerate(items):
            where = f"{path}.{index}"
            if not isinstance(item, dict):
                # Named on the list (not its item): an item that is not a filter breaks the
                # list's shape, the one rule read (length first: a long string is refused here).
                raise _refuse(path, "must be a list of filters (objects: field, operator, value)")
            join = item.get("type", "and")
            if join not in ("and", "or"):
                raise _refuse(f"{where}.type", "must be and or or")
            if "nested" in item:
                condition = self.filters(item["nested"], path=f"{where}.nested", depth=depth + 1)
            else:
                condition = self.condition(item, path=where)
            # The first condition starts the group, whatever its type (as in Orion).
            if index == 0:
                joined = condition
            elif join == "or":
                joined |= condition
            else:
                joined &= condition
        return joined

    def condition(self, item: dict, *, path: str) -> Q:
        self.count += 1
        if self.count > MAX_FILTERS:
            raise _refuse(path, f"is past the limit of {MAX_FILTERS} filters")
        name = item.get("field")
        if not isinstance(name, str) or name not in self.fields:
            shown = name if isinstance(name, str) and len(name) <= MAX_TEXT else "this field"
            allowed = ", ".join(self.fields)
            raise _refuse(
                f"{path}.field", f"'{shown}' is not a field a search may name (one of {allowed})"
            )
        field = self.fields[name]
        operator = item.get("operator", "=")
        if operator not in OPERATORS:
            raise _refuse(f"{path}.operator", "must be one of " + ", ".join(OPERATORS))
        if operator in TEXT_ONLY and not field.text:
            raise _refuse(f"{path}.operator", f"{operator} applies to text fields only")
        if "value" not in item:
            raise _refuse(f"{path}.value", "is required")
        value = item["value"]
        if operator in ("in", "not in"):
            if not isinstance(value, list) or not value or len(value) > MAX_IN_VALUES:
                raise _refuse(f"{path}.value", f"must be a list of 1 to {MAX_IN_VALUES} values")
            values = [
                self.value(field, entry, path=f"{path}.value.{index}")
                for index, entry in enumerate(value)
            ]
            condition = Q(**{f"{field.lookup}__in": values})
            return _sql_not(field, condition) if operator == "not in" else condition
        if value is None:
            if operator not in ("=", "!="):
                raise _refuse(f"{path}.value", "null compares with = and != only")
            condition = Q(**{f"{field.lookup}__isnull": True})
            return ~condition if operator == "!=" else condition
        value = self.value(field, value, path=f"{path}.value")
        if operator in ORDERED:
            condition = Q(**{f"{field.lookup}__{ORDERED[operator]}": value})
            # Django drops a comparison every value of the field meets (`limit > -1` on a
            # positive field), nulls included; SQL's comparison never lists a null.
            return (
                condition & Q(**{f"{field.lookup}__isnull": False}) if field.nullable else condition
            )
        if operator in TEXT_ONLY:
            condition = _like(field.lookup, _pattern(value, path=f"{path}.value"))
            return _sql_not(field, condition) if operator == "not like" else condition
        condition = Q(**{field.lookup: value})
        return _sql_not(field, condition) if operator == "!=" else condition

    @staticmethod
    def value(field: SearchField, value: Any, *, path: str) -> Any:
        try:
            read = field.read(value)
        except Refused as refused:
            raise _refuse(path, str(refused)) from None
        if isinstance(read, Decimal):
            # As a numeric parameter: a field's own preparation could round it to the
            # column's type (`discount < 10.5` must not become `discount < 10`).
            return Value(read, output_field=DecimalField())
        return read


def _sql_not(field: SearchField, condition: Q) -> Q:
    """SQL's negation, as Laravel's `!=`, `not in` and `not like` are: a comparison with NULL
    is never true, so a row whose field is null is not listed by them either (Django's `~Q`
    alone would list it)."""
    if field.nullable:
        return ~condition & Q(**{f"{field.lookup}__isnull": False})
    return ~condition


def _pattern(pattern: str, *, path: str) -> str:
    if len(pattern) > MAX_LIKE_LENGTH:
        raise _refuse(path, f"a like pattern must be at most {MAX_LIKE_LENGTH} characters")
    if pattern.count("%") + pattern.count("_") > MAX_LIKE_WILDCARDS:
        raise _refuse(
            path, f"a like pattern may have at most {MAX_LIKE_WILDCARDS} wildcards (% and _)"
        )
    return pattern


def _like(lookup: str, pattern: str) -> Q:
    """SQL LIKE's `%` (any run) and `_` (one character), case-sensitive as on PostgreSQL; a
    pattern without either is the value itself."""
    if "%" not in pattern and "_" not in pattern:
        return Q(**{lookup: pattern})
    return Q(**{f"{lookup}__like": pattern})


def _search_term(search: Any, *, fields: Mapping[str, SearchField], searched_by) -> Q:
    if search is None:
        return Q()
    if not isinstance(search, dict):
        raise _refuse("search", "must be an object with value and case_sensitive")
    value = search.get("value")
    if value is None or value == "":
        return Q()
    try:
        value = text_value(value)
    except Refused as refused:
        raise _refuse("search.value", str(refused)) from None
    case_sensitive = search.get("case_sensitive", False)
    if not isinstance(case_sensitive, bool):
        raise _refuse("search.case_sensitive", "must be true or false")
    lookup = "contains" if case_sensitive else "icontains"
    condition = Q()
    for name in searched_by:
        condition |= Q(**{f"{fields[name].lookup}__{lookup}": value})
    return condition


def _ordering(sort: Any, *, fields: Mapping[str, SearchField], tiebreak: str) -> tuple[str, ...]:
    if sort is None:
        return (tiebreak,)
    if not isinstance(sort, list) or len(sort) > MAX_SORTS:
        raise _refuse("sort", f"must be a list of at most {MAX_SORTS} sorts")
    ordering = []
    for index, item in enumerate(sort):
        where = f"sort.{index}"
        if not isinstance(item, dict):
            raise _refuse("sort", f"must be a list of at most {MAX_SORTS} sorts")
        if item.get("field") not in fields:
            raise _refuse(f"{where}.field", "must name a field a search may name")
        direction = item.get("direction", "asc")
        if direction not in ("asc", "desc"):
            raise _refuse(f"{where}.direction", "must be asc or desc")
        lookup = fields[item["field"]].lookup
        ordering.append(f"-{lookup}" if direction == "desc" else lookup)
    # The id last: rows equal on every sort field keep one order across pages.
    if tiebreak not in ordering and f"-{tiebreak}" not in ordering:
        ordering.append(tiebreak)
    return tuple(ordering)


# The coupon's own fields, as its representation names them; the search term looks in the
# code. `products` and `product_variants` are lists of references, which no comparison of these
# operators reads as one value: not searchable.
COUPON_FIELDS = {
    name: search_field(Coupon, name)
    for name in COUPON_API_FIELDS
    if name not in COUPON_REFERENCE_FIELDS
}
COUPON_SEARCHED_BY = ("code",)


def coupon_search_parse(body: Mapping[str, Any]) -> Search:
    return search_parse(body, fields=COUPON_FIELDS, searched_by=COUPON_SEARCHED_BY)
