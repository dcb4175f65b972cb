"""The list styles of the spec (docs/design.md "Pagination"), one paginator class each; the event
journal's cursor is the third (events/pagination.py).

LaravelPagination: Laravel's LengthAwarePaginator output, `{data, links: {first,last,prev,next},
meta: {current_page, from, last_page, links, path, per_page, to, total}}`; `limit` 1..100
(default 15) and `page` >= 1, otherwise 422. WholeListPagination: `{data}`, every row.
"""

import math
import re
import sys
from urllib.parse import urlencode

from django.conf import settings
from django.db.models import Expression, IntegerField, QuerySet, Subquery
from rest_framework.pagination import BasePagination
from rest_framework.response import Response

from core.api.errors import ValidationFailed

DEFAULT_PAGE_SIZE = 15
MAX_PAGE_SIZE = 100
ON_EACH_SIDE = 3  # Laravel's default window around the current page
# int() would also take "1_0", " 5", "+5" and "\uff15" (a full-width 5): only ASCII digits count.
INTEGER_PATTERN = re.compile(r"-?[0-9]+")
# Length first (core/api/fields.py): a sign and the most digits int() reads by default; a
# longer value was refused already, by int() after the pattern read all of it.
INTEGER_MAX_LENGTH = (sys.get_int_max_str_digits() or 4300) + 1
# The page's rows carry the list's total under this name.
TOTAL_ANNOTATION = "pagination_total"


def counted_by(queryset: QuerySet, total: Expression) -> QuerySet:
    """`queryset`, whose total LaravelPagination reads from `total` (a maintained counter of
    the list, core/database/list_totals.py) instead of counting its rows."""
    return queryset.annotate(**{TOTAL_ANNOTATION: total})


class CountOf(Subquery):
    """A queryset's row count as a scalar subquery: PostgreSQL counts it once (an InitPlan,
    by an index-only scan where one fits), however many rows the outer query returns.
    `COUNT(*) OVER ()` would read and buffer every row of the list before the first page
    (docs/benchmarks/coupons-growth.md)."""

    template = "(SELECT COUNT(*) FROM (%(subquery)s) AS counted)"
    output_field = IntegerField()


def parse_int_param(
    request, name: str, *, default: int, minimum: int, maximum: int | None = None
) -> int:
    """Reads an integer query parameter or raises 422 naming it."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    bounds = f"between {minimum} and {maximum}" if maximum else f"at least {minimum}"
    message = f"must be an integer {bounds}"
    if len(raw) > INTEGER_MAX_LENGTH or not INTEGER_PATTERN.fullmatch(raw):
        raise ValidationFailed.field(name, message)
    try:
        value = int(raw)
    except ValueError:  # more digits than sys.get_int_max_str_digits() allows
        raise ValidationFailed.field(name, message) from None
    if value < minimum or (maximum is not None and value > maximum):
        raise ValidationFailed.field(name, message)
    return value


def _page_range_elements(current: int, last: int) -> list:
    """Laravel's UrlWindow: page numbers with '...' gaps once there are many pages."""
    if last < ON_EACH_SIDE * 2 + 8:
        return [list(range(1, last + 1))]
    window = ON_EACH_SIDE + 4
    start, finish = [1, 2], [last - 1, last]
    if current <= window:
        return [list(range(1, window + ON_EACH_SIDE + 1)), "...", finish]
    if current > last - window:
        return [start, "...", list(range(last - (window + ON_EACH_SIDE - 1), last + 1))]
    return [
        start,
        "...",
        list(range(current - ON_EACH_SIDE, current + ON_EACH_SIDE + 1)),
        "...",
        finish,
    ]


def query_parameter(name: str, schema: dict, description: str) -> dict:
    """An optional query parameter, as a paginator declares its own in the schema."""
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema,
    }


def limit_parameter(paginator, items: str) -> dict:
    """`limit`, as a paginator with `default_limit` and `max_limit` declares it."""
    return query_parameter(
        "limit",
        {
            "type": "integer",
            "minimum": 1,
            "maximum": paginator.max_limit,
            "default": paginator.default_limit,
        },
        f"{items} per page, 1 to {paginator.max_limit} (default {paginator.default_limit}); "
        "otherwise 422.",
    )


def object_schema(**properties) -> dict:
    """The schema of an object whose every property is required."""
    return {"type": "object", "required": list(properties), "properties": properties}


# From this offset on, a page is read by a deferred join: the page's ids first (an index-only
# scan where an index fits), then only those rows, so the rows OFFSET skips are not read whole
# (figures: docs/benchmarks/coupons-growth.md). Below it OFFSET skips so few rows that the
# join's second query costs more than it saves (docs/benchmarks/coupons.md).
DEFERRED_JOIN_FROM = 1_000

# The deepest offset a page is fetched from (the schema allows any page number): past the end
# of every list.
MAX_OFFSET = 2**62

# Where the OpenAPI examples of pages (and of the resources in them) live.
EXAMPLE_BASE_URL = "https://storefront.example.com"


class LaravelPagination(BasePagination):
    default_limit = DEFAULT_PAGE_SIZE
    max_limit = MAX_PAGE_SIZE
    # The list's path in its schema example (a one-item first page), set per view with
    # `documented_at`: drf-spectacular builds a list operation's example from the item's
    # example and the `example` of each field of this envelope.
    example_path = "/api/v2/..."

    @classmethod
    def documented_at(cls, path: str) -> type["LaravelPagination"]:
        return type(cls.__name__, (cls,), {"example_path": path})

    def paginate_queryset(self, queryset, request, view=None):
        """The page the request asks for, and the list's total.

        The total comes with the page's rows in one statement, as their `counted_by`
        annotation: a maintained counter where the list has one (O(1)), otherwise a count of
        the list (one ORM compilation and one round trip fewer than COUNT then SELECT); only a
        page past the end reads it on its own. A deep page is read by a deferred
        join (`DEFERRED_JOIN_FROM`). The rows are what the queryset yields: model instances,
        or dicts of a `values()` list."""
        self.request = request
        self.per_page, self.page = self.page_params(request)
        # Deeper than any list, and than PostgreSQL's OFFSET (a bigint) could even say.
        offset = min((self.page - 1) * self.per_page, MAX_OFFSET)
        if TOTAL_ANNOTATION not in queryset.query.annotations:
            queryset = counted_by(queryset, CountOf(queryset.order_by().values("pk")))
        if offset < DEFERRED_JOIN_FROM:
            page = list(queryset[offset : offset + self.per_page])
        else:
            page_ids = queryset.values("pk")[offset : offset + self.per_page]
            page = list(queryset.filter(pk__in=page_ids))
        if page:
            first = page[0]
            self.total = (
                first[TOTAL_ANNOTATION]
                if isinstance(first, dict)
                else getattr(first, TOTAL_ANNOTATION)
            )
        elif not offset:
            self.total = 0  # an empty first page: an empty list
        else:
            # Past the end: the list's first row carries the total, if the list has a row.
            totals = queryset.values_list(TOTAL_ANNOTATION, flat=True)[:1]
            self.total = next(iter(totals), 0)
        self.last_page = max(1, math.ceil(self.total / self.per_page))
        self._link_parts = self._link_around_page()
        return page

    def page_params(self, request) -> tuple[int, int]:
        """(limit, page) the request asks for; a POST search may take them from its body."""
        per_page = parse_int_param(
            request, "limit", default=self.default_limit, minimum=1, maximum=self.max_limit
        )
        return per_page, parse_int_param(request, "page", default=1, minimum=1)

    def _link_around_page(self) -> tuple[str, str]:
        """A link's text before and after its page number. The request's other query
        parameters are encoded once, in sorted order around `page`, rather than the whole query
        again for every link."""
        params = sorted((k, v) for k, v in self.request.query_params.lists() if k != "page")
        before = urlencode([p for p in params if p[0] < "page"], doseq=True)
        after = urlencode([p for p in params if p[0] > "page"], doseq=True)
        return (
            f"{self._path()}?{before}{'&' if before else ''}page=",
            f"&{after}" if after else "",
        )

    def _url(self, page: int | None) -> str | None:
        if page is None:
            return None
        before, after = self._link_parts
        return f"{before}{page}{after}"

    def _path(self) -> str:
        return f"{settings.BASE_URL}{self.request.path}"

    def get_paginated_response(self, data):
        page, last = self.page, self.last_page
        count = len(data)
        first_item = (page - 1) * self.per_page + 1 if count else None
        prev_page = page - 1 if page > 1 else None
        next_page = page + 1 if page < last else None
        meta_links = [{"url": self._url(prev_page), "label": "&laquo; Previous", "active": False}]
        for element in _page_range_elements(page, last):
            if element == "...":
                meta_links.append({"url": None, "label": "...", "active": False})
                continue
            meta_links.extend(
                {"url": self._url(n), "label": str(n), "active": n == page} for n in element
            )
        meta_links.append({"url": self._url(next_page), "label": "Next &raquo;", "active": False})
        return Response(
            {
                "data": data,
                "links": {
                    "first": self._url(1),
                    "last": self._url(last),
                    "prev": self._url(prev_page),
                    "next": self._url(next_page),
                },
                "meta": {
                    "current_page": page,
                    "from": first_item,
                    "last_page": last,
                    "links": meta_links,
                    "path": self._path(),
                    "per_page": self.per_page,
                    "to": first_item + count - 1 if count else None,
                    "total": self.total,
                },
            }
        )

    def get_paginated_response_schema(self, schema):
        nullable_url = {"type": "string", "format": "uri", "nullable": True}
        path = f"{EXAMPLE_BASE_URL}{self.example_path}"
        first = f"{path}?page=1"
        links = {"first": first, "last": first, "prev": None, "next": None}
        meta = {
            "current_page": {"type": "integer", "example": 1},
            "from": {"type": "integer", "nullable": True, "example": 1},
            "last_page": {"type": "integer", "example": 1},
            "links": {
                "type": "array",
                "example": [
                    {"url": None, "label": "&laquo; Previous", "active": False},
                    {"url": first, "label": "1", "active": True},
                    {"url": None, "label": "Next &raquo;", "active": False},
                ],
                "items": object_schema(
                    url=nullable_url, label={"type": "string"}, active={"type": "boolean"}
                ),
            },
            "path": {"type": "string", "format": "uri", "example": path},
            "per_page": {"type": "integer", "example": self.default_limit},
            "to": {"type": "integer", "nullable": True, "example": 1},
            "total": {"type": "integer", "example": 1},
        }
        return object_schema(
            data=schema,
            links=object_schema(**{k: {**nullable_url, "example": v} for k, v in links.items()}),
            meta=object_schema(**meta),
        )

    def get_schema_operation_parameters(self, view):
        return [
            limit_parameter(self, "Items"),
            query_parameter(
                "page",
                {"type": "integer", "minimum": 1, "default": 1},
                "Page number, starting at 1.",
            ),
        ]


class WholeListPagination(BasePagination):
    """The whole list in `{data}`, no page and no parameter (the stores list): `limit`, `page`
    or any other query parameter is ignored, as unknown parameters are."""

    def paginate_queryset(self, queryset, request, view=None):
        return list(queryset)

    def get_paginated_response(self, data):
        return Response({"data": data})

    def get_paginated_response_schema(self, schema):
        return object_schema(data=schema)
