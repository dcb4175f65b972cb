"""Coupon reads, always scoped to one store."""

from django.core.exceptions import EmptyResultSet
from django.db.models import BigIntegerField, CharField, Func, Value
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast

from core.api.errors import NotFound, ValidationFailed
from core.api.pagination import counted_by
from coupons.models import COUPON_API_FIELDS, Coupon, CouponQuerySet, CouponTotal
from coupons.search import Search
from stores.models import Store

TRASHED_WITHOUT, TRASHED_WITH, TRASHED_ONLY = "without", "with", "only"


class UtcTimestamp(Func):
    """A timestamp as the API renders it, rendered by PostgreSQL: ISO 8601 in UTC with `Z`,
    microseconds only when there are any (what DRF's DateTimeField and `utc_timestamp` give).
    Loading each timestamp into Python (Django's loader is Python code) and formatting it there
    is per-row work a page repeats three times a coupon (docs/benchmarks/coupons.md)."""

    template = (
        "replace(to_char(%(expressions)s AT TIME ZONE 'UTC', "
        "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), '.000000Z', 'Z')"
    )
    output_field = CharField()


# The timestamps, rendered by PostgreSQL (`UtcTimestamp`) under these keys.
LISTED_TIMESTAMPS = {
    name: f"{name}_rendered" for name in ("expires_at", "created_at", "updated_at", "deleted_at")
}
# The amounts as their quoted strings: numeric(12,2) cast to text is "25.00", what
# `coupons.serializers.amount` makes of a Decimal, without loading a Decimal per amount.
LISTED_AMOUNTS = {
    name: f"{name}_rendered" for name in ("discount", "minimum_amount", "maximum_discount_amount")
}
# A listed coupon is a dict of its API fields (`values()`: building a model instance per row
# is work a page never uses), the timestamps and amounts under the keys above already rendered
# by PostgreSQL; CouponSerializer reads it.
LISTED_FIELDS = tuple(
    name
    for name in COUPON_API_FIELDS
    if name not in LISTED_TIMESTAMPS and name not in LISTED_AMOUNTS
)
# Each listing's total: the store's CouponTotal row (no row: no coupons), as SQL. The same
# scalar subquery as an ORM Subquery is built and resolved anew on every request, a large
# share of a list's own time (docs/benchmarks/coupons.md); only constants are interpolated, the
# store is a parameter.
LISTING_TOTAL_SQL = {
    trashed: f"COALESCE((SELECT {total} FROM {CouponTotal._meta.db_table} "  # noqa: S608
    "WHERE store_id = %s), 0)"
    for trashed, total in (
        (TRASHED_WITHOUT, "live"),
        (TRASHED_WITH, "live + deleted"),
        (TRASHED_ONLY, "deleted"),
    )
}


# Every coupon as listed, oldest first (id order, so walking pages is stable while coupons are
# added): CouponViewSet's queryset. Built once: its columns and their rendering are the same
# for every request, so no request pays for building them.
LISTED_COUPONS = Coupon.objects.order_by("id").values(
    *LISTED_FIELDS,
    **{key: UtcTimestamp(name) for name, key in LISTED_TIMESTAMPS.items()},
    **{key: Cast(name, CharField()) for name, key in LISTED_AMOUNTS.items()},
)


def coupon_listing(coupons: CouponQuerySet, *, store: Store, trashed: str) -> CouponQuerySet:
    """The store's listed `coupons` (`LISTED_COUPONS`) narrowed to the live ones (`without`),
    all (`with`) or the deleted ones (`only`), counted by the store's maintained total of that
    listing (O(1), core/database/list_totals.py) rather than by a count of its rows (`counted_by`,
    which LaravelPagination reads)."""
    return counted_by(coupons_trashed(coupons, trashed), coupon_total(store=store, trashed=trashed))


def coupons_trashed(coupons: CouponQuerySet, trashed: str) -> CouponQuerySet:
    """`coupons` narrowed to the live ones (`without`), all (`with`) or the deleted ones
    (`only`): what `with_trashed` and `only_trashed` ask for (coupons/filters.py)."""
    if trashed == TRASHED_ONLY:
        return coupons.deleted()
    if trashed == TRASHED_WITHOUT:
        return coupons.live()
    return coupons


def coupon_total(*, store: Store, trashed: str) -> RawSQL:
    """The number of coupons in the store's `trashed` listing, as an expression."""
    return RawSQL(  # noqa: S611 (constant SQL, the store as a parameter)
        LISTING_TOTAL_SQL[trashed], (store.pk,), output_field=BigIntegerField()
    )


def coupon_search(
    coupons: CouponQuerySet, *, store: Store, trashed: str, search: Search
) -> CouponQuerySet:
    """The `trashed` listing of `coupons` (the store's, in id order) narrowed and ordered as
    `search` says (coupons/search.py), its total a count of the rows that match (the listing's
    maintained total counts them all). An empty search is the listing itself."""
    if not search.condition and search.order_by == ("id",):
        return coupon_listing(coupons, store=store, trashed=trashed)
    found = coupons_trashed(coupons, trashed).filter(search.condition)
    return counted_by(found.order_by(*search.order_by), _rows_counted(found))


def _rows_counted(coupons: CouponQuerySet) -> RawSQL:
    """The number of `coupons`, as a scalar subquery of their own compiled statement. The same
    count as an ORM subquery (core/api/pagination.py `CountOf`, which the paginator uses when
    a list has no total) is resolved into the outer query by relabelling every alias, which
    made a search cost clearly more than the list with the same rows
    (docs/benchmarks/coupons.md). Django compiles the SQL and keeps the values
    as parameters. A condition Django finds can match no row (`limit = -1` on a positive
    column) compiles to no statement: then nothing is counted."""
    try:
        sql, params = coupons.order_by().values("pk").query.sql_with_params()
    except EmptyResultSet:
        return Value(0, output_field=BigIntegerField())
    counted = f"SELECT COUNT(*) FROM ({sql}) AS counted"  # noqa: S608 (compiled by Django)
    return RawSQL(counted, params, output_field=BigIntegerField())  # noqa: S611


def coupon_get(*, store: Store, coupon_id: int, trashed: str = TRASHED_WITHOUT) -> Coupon:
    """A coupon of `store`, live unless `trashed` says otherwise (a read with `with_trashed` or
    `only_trashed`); another store's coupon, or one outside `trashed`, is a 404 alike."""
    coupon = (
        coupons_trashed(Coupon.objects.all(), trashed).filter(store=store, pk=coupon_id).first()
    )
    if coupon is None:
        raise NotFound("No such coupon in this store.")
    coupon.store = store
    return coupon


def coupons_get_many(*, store: Store, keyed_ids: dict, lock: bool = False) -> dict:
    """The live coupons of `store` named by `keyed_ids` (key -> id), by key; a 422 names each
    key whose coupon is another store's, deleted or unknown (a batch names its resources).
    `lock`: their rows locked in id order (two batches over the same coupons wait rather than
    deadlock), inside the caller's transaction."""
    coupons = Coupon.objects.live().filter(store=store, pk__in=set(keyed_ids.values()))
    if lock:
        coupons = coupons.select_for_update(of=("self",)).order_by("pk")
    found = {coupon.pk: coupon for coupon in coupons}
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
