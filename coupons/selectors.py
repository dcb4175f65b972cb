"""Coupon reads, always scoped to one store."""

import functools
from collections import namedtuple

from django.db import connection
from psycopg.types.datetime import TimestamptzLoader

from config.api.errors import NotFound, ValidationFailed
from config.db import PreparedStatement
from coupons.models import Coupon, CouponQuerySet, CouponTotal
from coupons.search import Search
from stores.models import Store

TRASHED_WITHOUT, TRASHED_WITH, TRASHED_ONLY = "without", "with", "only"
# trashed: (the listing's condition on a coupon, its total in CouponTotal's columns)
LISTINGS = {
    TRASHED_WITHOUT: ("AND deleted_at IS NULL", "live"),
    TRASHED_WITH: ("", "live + deleted"),
    TRASHED_ONLY: ("AND deleted_at IS NOT NULL", "deleted"),
}


def coupon_listing(coupons: CouponQuerySet, *, store: Store, trashed: str) -> CouponQuerySet:
    """`coupons` (the store's, in id order) narrowed to the live ones (`without`), all
    (`with`) or the deleted ones (`only`), its pages and total read by `coupon_page`.

    `read_page` is an attribute of this one queryset: chaining anything on it (a clone) drops
    it, and LaravelPagination then reads the page through the ORM."""
    if trashed == TRASHED_ONLY:
        coupons = coupons.deleted()
    elif trashed == TRASHED_WITHOUT:
        coupons = coupons.live()
    else:
        coupons = coupons.all()  # a queryset of its own for the attribute
    coupons.read_page = functools.partial(coupon_page, store=store, trashed=trashed)
    return coupons


# coupon_page's plain SQL, one statement per listing: the model's columns, the listing's
# condition and its total from the store's CouponTotal row (no row: no coupons). Only
# constants are interpolated; the values are parameters.
COUPON_FIELDS = [field.attname for field in Coupon._meta.concrete_fields]
# A listed coupon: the model's field values under their attribute names, read-only. Building
# model instances instead was about 6% of a request for a page of 100 (issue 14).
CouponRow = namedtuple("CouponRow", COUPON_FIELDS)
COUPON_COLUMNS = ", ".join(
    connection.ops.quote_name(field.column) for field in Coupon._meta.concrete_fields
)
# A deferred join: the page's ids first, then only those rows' columns; the rows OFFSET
# skips are not read whole (the last page at 1M coupons: 165 -> 108 ms,
# docs/benchmarks/coupons-growth.md).
COUPON_TOTAL_SQL = {
    trashed: f"COALESCE((SELECT {total} FROM {CouponTotal._meta.db_table} "  # noqa: S608
    "WHERE store_id = %(store)s), 0)"
    for trashed, (_, total) in LISTINGS.items()
}
COUPON_PAGE_SQL = {
    trashed: f"SELECT {COUPON_COLUMNS}, {COUPON_TOTAL_SQL[trashed]} "  # noqa: S608
    f"FROM {Coupon._meta.db_table} WHERE id IN ("
    f"SELECT id FROM {Coupon._meta.db_table} WHERE store_id = %(store)s {condition} "
    "ORDER BY id LIMIT %(limit)s OFFSET %(offset)s) ORDER BY id"
    for trashed, (condition, _) in LISTINGS.items()
}
# Prepared once per database session (config/db.py): planning was half of the statement's
# time (page of 15: 0.38-0.44 ms unprepared, 0.23 ms prepared; docs/benchmarks/coupons.md).
COUPON_PAGE_STATEMENT = {
    trashed: PreparedStatement(f"storefront_coupon_page_{trashed}", sql)
    for trashed, sql in COUPON_PAGE_SQL.items()
}


def coupon_page(
    *, store: Store, trashed: str, offset: int, limit: int
) -> tuple[list[CouponRow], int]:
    """The `trashed` listing's rows `[offset : offset + limit]` and its total, in one prepared
    statement; the total alone is a second one only for an empty page past the end (an empty
    first page means an empty list). The ORM's statement instead (compiled per request, rows
    built as model instances) costs the list a third of its throughput
    (docs/benchmarks/coupons.md "Fast paths (issue 22)").
    tests/coupons/test_coupon_list_api.py compares it with the ORM for every listing."""
    with connection.cursor() as cursor:
        # psycopg's own timestamptz loader: Django's (a Python subclass that sets the tzinfo
        # again) was a fifth of a request's time for a page of 100. Both give aware datetimes
        # in the session's time zone, which Django sets (docs/benchmarks/coupons.md).
        cursor.cursor.adapters.register_loader("timestamptz", TimestamptzLoader)
        COUPON_PAGE_STATEMENT[trashed].execute(
            cursor, {"store": store.pk, "limit": limit, "offset": offset}
        )
        rows = cursor.fetchall()
        if rows:
            return [CouponRow._make(row[:-1]) for row in rows], rows[0][-1]
        if not offset:
            return [], 0
        cursor.execute(f"SELECT {COUPON_TOTAL_SQL[trashed]}", {"store": store.pk})
        return [], cursor.fetchone()[0]


def coupon_search(
    coupons: CouponQuerySet, *, store: Store, trashed: str, search: Search
) -> CouponQuerySet:
    """The `trashed` listing of `coupons` (the store's, in id order) narrowed and ordered as
    `search` says (coupons/search.py), its total a count of the rows that match (the listing's
    maintained total counts them all). An empty search is the listing itself."""
    if not search.condition and search.order_by == ("id",):
        return coupon_listing(coupons, store=store, trashed=trashed)
    if trashed == TRASHED_ONLY:
        coupons = coupons.deleted()
    elif trashed == TRASHED_WITHOUT:
        coupons = coupons.live()
    return coupons.filter(search.condition).order_by(*search.order_by)


def coupon_get(*, store: Store, coupon_id: int) -> Coupon:
    """A live coupon of `store`; another store's or a deleted coupon is a 404 alike."""
    coupon = Coupon.objects.live().filter(store=store, pk=coupon_id).first()
    if coupon is None:
        raise NotFound("No such coupon in this store.")
    coupon.store = store
    return coupon


def coupons_get_many(*, store: Store, keyed_ids: dict) -> dict:
    """The live coupons of `store` named by `keyed_ids` (key -> id), by key; a 422 names each
    key whose coupon is another store's, deleted or unknown (a batch names its resources)."""
    found = {
        coupon.pk: coupon
        for coupon in Coupon.objects.live().filter(store=store, pk__in=set(keyed_ids.values()))
    }
    missing = {
        f"resources.{key}": ["is not a live coupon of this store"]
        for key, coupon_id in keyed_ids.items()
        if coupon_id not in found
    }
    if missing:
        raise ValidationFailed(missing)
    for coupon in found.values():
        coupon.store = store
    return {key: found[coupon_id] for key, coupon_id in keyed_ids.items()}
