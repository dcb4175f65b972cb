"""Coupon reads, always scoped to one store."""

from django.db.models import QuerySet

from config.api.errors import NotFound
from coupons.models import Coupon
from stores.models import Store

TRASHED_WITHOUT, TRASHED_WITH, TRASHED_ONLY = "without", "with", "only"


def coupon_list(*, store: Store, trashed: str = TRASHED_WITHOUT) -> QuerySet[Coupon]:
    """The store's coupons in id order (oldest first, so walking pages is stable while
    coupons are added); live only, live and deleted (`with`), or deleted only (`only`)."""
    coupons = Coupon.objects.filter(store=store).order_by("id")
    return coupon_list_filter_trashed(coupons, trashed)


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
