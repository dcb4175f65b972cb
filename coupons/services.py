"""Coupon writes: create, update, soft delete, restore, and applying a coupon to an order."""

from dataclasses import dataclass

from django.db.models import F, Q
from django.db.models.functions import Lower
from django.utils import timezone

from config.api.errors import ValidationFailed
from coupons.models import Coupon
from stores.models import Store

COUPON_CODE_FIELD = "coupon_code"


@dataclass(frozen=True)
class CouponApplication:
    coupon: Coupon
    discount_cents: int  # never more than the order total


def coupon_discount_cents(coupon: Coupon, order_total_cents: int) -> int:
    """PERCENTAGE rounds down to the cent; AMOUNT is whole dollars; capped at the total."""
    if coupon.type == Coupon.TYPE_PERCENTAGE:
        discount = order_total_cents * coupon.discount // 100
    else:
        discount = coupon.discount * 100
    return max(0, min(discount, order_total_cents))


def coupon_apply(*, store: Store, code: str, order_total_cents: int) -> CouponApplication:
    """Counts one use of a live coupon of `store` for an order of `order_total_cents`.

    Runs inside the caller's transaction. Refuses unknown, deleted, expired, used-up and
    below-minimum coupons with a 422 on `coupon_code`. The use is counted by one conditional
    UPDATE; PostgreSQL re-checks its WHERE on the latest row version after waiting for a
    concurrent writer, so a coupon with limit k is applied at most k times.
    """
    if not isinstance(code, str) or not code:
        raise ValidationFailed.field(COUPON_CODE_FIELD, "is not a coupon of this store")
    coupon = (
        Coupon.objects.alias(code_lower=Lower("code"))
        .filter(store=store, code_lower=code.lower(), deleted_at__isnull=True)
        .first()
    )
    if coupon is None:
        raise ValidationFailed.field(COUPON_CODE_FIELD, "is not a coupon of this store")
    now = timezone.now()
    if coupon.expires_at is not None and coupon.expires_at <= now:
        raise ValidationFailed.field(COUPON_CODE_FIELD, "has expired")
    if coupon.minimum_amount is not None and order_total_cents < coupon.minimum_amount * 100:
        raise ValidationFailed.field(
            COUPON_CODE_FIELD,
            f"needs an order total of at least {coupon.minimum_amount} dollars",
        )
    counted = (
        Coupon.objects.filter(pk=coupon.pk, deleted_at__isnull=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .filter(Q(limit__isnull=True) | Q(times_used__lt=F("limit")))
        .update(times_used=F("times_used") + 1)
    )
    if counted == 0:
        coupon.refresh_from_db()
        if coupon.deleted_at is not None:
            raise ValidationFailed.field(COUPON_CODE_FIELD, "is not a coupon of this store")
        if coupon.expires_at is not None and coupon.expires_at <= now:
            raise ValidationFailed.field(COUPON_CODE_FIELD, "has expired")
        raise ValidationFailed.field(COUPON_CODE_FIELD, "has reached its usage limit")
    coupon.refresh_from_db(fields=["times_used"])
    return CouponApplication(
        coupon=coupon, discount_cents=coupon_discount_cents(coupon, order_total_cents)
    )
