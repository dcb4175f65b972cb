"""Coupon reads, always scoped to one store."""

from collections import namedtuple

from django.db import connection
from django.db.models import QuerySet

from config.api.errors import NotFound
from config.db import PreparedStatement
from coupons.models import Coupon, CouponTotal
from stores.models import Store

TRASHED_WITHOUT, TRASHED_WITH, TRASHED_ONLY = "without", "with", "only"


def coupon_list(*, store: Store, trashed: str = TRASHED_WITHOUT) -> QuerySet[Coupon]:
    """The store's coupons in id order (oldest first, so walking pages is stable while
    coupons are added); live only, live and deleted (`with`), or deleted only (`only`)."""
    coupons = Coupon.objects.filter(store=store).order_by("id")
    return coupon_list_filter_trashed(coupons, trashed)


# coupon_page's plain SQL, one statement per listing: the model's columns, each listing's
# condition as coupon_list_filter_trashed states it for querysets, and its total from the
# store's CouponTotal row (no row: no coupons). Only constants are interpolated; the values
# are parameters.
COUPON_FIELDS = [field.attname for field in Coupon._meta.concrete_fields]
# A listed coupon: the model's field values under their attribute names, read-only. Building
# model instances instead was about 6% of a request for a page of 100 (issue 14).
CouponRow = namedtuple("CouponRow", COUPON_FIELDS)
COUPON_COLUMNS = ", ".join(
    connection.ops.quote_name(field.column) for field in Coupon._meta.concrete_fields
)
COUPON_LISTINGS = {
    # trashed: (condition on a coupon, its total in CouponTotal's columns)
    TRASHED_WITHOUT: ("AND deleted_at IS NULL", "live"),
    TRASHED_WITH: ("", "live + deleted"),
    TRASHED_ONLY: ("AND deleted_at IS NOT NULL", "deleted"),
}
COUPON_TOTAL_SQL = {
    trashed: f"COALESCE((SELECT {total} FROM {CouponTotal._meta.db_table} "  # noqa: S608
    "WHERE store_id = %(store)s), 0)"
    for trashed, (_, total) in COUPON_LISTINGS.items()
}
# A deferred join: the page's ids first, then only those rows' columns; the rows OFFSET
# skips are not read whole (the last page at 1M coupons: 165 -> 108 ms,
# docs/benchmarks/coupons-growth.md).
COUPON_PAGE_SQL = {
    trashed: f"SELECT {COUPON_COLUMNS}, {COUPON_TOTAL_SQL[trashed]} "  # noqa: S608
    f"FROM {Coupon._meta.db_table} WHERE id IN ("
    f"SELECT id FROM {Coupon._meta.db_table} WHERE store_id = %(store)s {condition} "
    "ORDER BY id LIMIT %(limit)s OFFSET %(offset)s) ORDER BY id"
    for trashed, (condition, _) in COUPON_LISTINGS.items()
}
# Prepared once per database session (config/db.py): planning was half of the statement's
# time (page of 15: 0.38-0.44 ms unprepared, 0.23 ms prepared; docs/benchmarks/coupons.md).
COUPON_PAGE_STATEMENT = {
    trashed: PreparedStatement(f"storefront_coupon_page_{trashed}", sql)
    for trashed, sql in COUPON_PAGE_SQL.items()
}


def coupon_total(*, store: Store, trashed: str) -> int:
    """The number of coupons `coupon_list(store=store, trashed=trashed)` lists: read from the
    store's CouponTotal row, O(1) at any size (counting was 136 ms at 1M coupons,
    docs/benchmarks/coupons-growth.md). On SQLite (`make run`, no triggers) it counts."""
    if connection.vendor != "postgresql":
        return coupon_list(store=store, trashed=trashed).count()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {COUPON_TOTAL_SQL[trashed]}", {"store": store.pk})
        return cursor.fetchone()[0]


def coupon_page(
    *, store: Store, trashed: str, offset: int, limit: int
) -> tuple[list[CouponRow], int | None]:
    """`coupon_list(store=store, trashed=trashed)[offset : offset + limit]` and the list's
    total (None when the page is empty), in one statement. The total is `coupon_total`'s
    counter row, read once (an InitPlan): counting the list instead made page 1 at 1M coupons
    45 times slower than at 1k (docs/benchmarks/coupons-growth.md).

    Plain SQL because this is the hottest read of the API: the equivalent queryset (compiled,
    rows built as model instances) took 2.16 ms for a page of 15 and 3.88 ms for 100, this
    function 0.75 and 2.32 ms (best of 10 x 50 in process; docs/benchmarks/coupons.md, issue 14).
    tests/coupons/test_coupon_list_api.py compares it with coupon_list for every listing.
    """
    if connection.vendor != "postgresql":
        # SQLite (`make run`): its raw rows carry naive datetimes; the ORM converts them.
        coupons = coupon_list(store=store, trashed=trashed)
        page = list(coupons[offset : offset + limit])
        return page, (coupons.count() if page else None)
    with connection.cursor() as cursor:
        COUPON_PAGE_STATEMENT[trashed].execute(
            cursor, {"store": store.pk, "limit": limit, "offset": offset}
        )
        rows = cursor.fetchall()
    return [CouponRow._make(row[:-1]) for row in rows], rows[0][-1] if rows else None


def coupon_list_filter_trashed(coupons: QuerySet[Coupon], trashed: str) -> QuerySet[Coupon]:
    if trashed == TRASHED_ONLY:
        return coupons.filter(deleted_at__isnull=False)
    if trashed == TRASHED_WITH:
        return coupons
    return coupons.filter(deleted_at__isnull=True)


def coupon_get(*, store: Store, coupon_id: int) -> Coupon:
    """A live coupon of `store`; another store's or a deleted coupon is a 404 alike."""
    coupon = Coupon.objects.filter(store=store, pk=coupon_id, deleted_at__isnull=True).first()
    if coupon is None:
        raise NotFound("No such coupon in this store.")
    coupon.store = store
    return coupon
