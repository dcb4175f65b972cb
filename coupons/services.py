"""Coupon writes: create, update, soft delete, restore, and applying a coupon to an order."""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.db.models.functions import Lower
from django.utils import timezone

from config.api.errors import NotFound, ValidationFailed
from coupons.models import PERCENTAGE_DISCOUNT_RULE, Coupon, discount_exceeds_type
from events.services import record
from stores.models import Store

COUPON_CODE_FIELD = "coupon_code"
CODE_TAKEN = "is already used by a live coupon of this store"
LIVE_CODE_CONSTRAINT = "coupon_store_live_code_uniq"


def _live_code_taken(*, store_id: int, code: str, exclude_pk: int | None) -> bool:
    same_code = (
        Coupon.objects.live()
        .alias(code_lower=Lower("code"))
        .filter(store_id=store_id, code_lower=code.lower())
    )
    if exclude_pk is not None:
        same_code = same_code.exclude(pk=exclude_pk)
    return same_code.exists()


def _coupon_save_with_live_code(coupon: Coupon) -> None:
    """Saves `coupon` (inside the caller's transaction); a live code clash is a 422 on `code`."""
    if _live_code_taken(store_id=coupon.store_id, code=coupon.code, exclude_pk=coupon.pk):
        raise ValidationFailed.field("code", CODE_TAKEN)
    try:
        # A savepoint: a concurrent writer may take the code between the check and the write.
        with transaction.atomic():
            coupon.save()
    except IntegrityError as error:
        # Only the live-code index means "taken"; a CHECK constraint failing is a bug (500).
        if getattr(getattr(error.__cause__, "diag", None), "constraint_name", None) != (
            LIVE_CODE_CONSTRAINT
        ):
            raise
        raise ValidationFailed.field("code", CODE_TAKEN) from None


def _coupon_lock(coupon: Coupon, *, deleted: bool = False) -> Coupon:
    """The coupon's current row, locked; NotFound when it is (or is not) deleted meanwhile.

    Only the coupon's row (`of`): FOR UPDATE on the joined store row too would block the
    foreign key checks (FOR KEY SHARE) of every coupon written in the store, and deadlock a
    concurrent creation that holds the store's CouponTotal row which this write's trigger
    then waits for (tests/coupons/test_coupon_totals.py)."""
    coupons = Coupon.objects.deleted() if deleted else Coupon.objects.live()
    locked = (
        coupons.select_for_update(of=("self",)).select_related("store").filter(pk=coupon.pk).first()
    )
    if locked is None:
        raise NotFound()
    return locked


def coupon_create(
    *,
    store: Store,
    code: str,
    type: str,
    discount: int,
    store_wide: bool,
    limit: int | None = None,
    minimum_amount: int | None = None,
    expires_at: datetime | None = None,
) -> Coupon:
    """Creates a coupon from values that passed CouponWriteSerializer's field rules."""
    now = timezone.now()
    coupon = Coupon(
        store=store,
        code=code,
        type=type,
        discount=discount,
        store_wide=store_wide,
        limit=limit,
        minimum_amount=minimum_amount,
        expires_at=expires_at,
        created_at=now,
        updated_at=now,
    )
    with transaction.atomic(durable=True):
        _coupon_save_with_live_code(coupon)
        record(store=store, type="coupon.created", subject=coupon, data={})
    return coupon


def coupon_update(*, coupon: Coupon, changes: Mapping[str, Any]) -> Coupon:
    """Applies `changes` (writable fields that passed the serializer's field rules).

    The merged coupon is checked again on the locked row: the serializer checked it against
    the row it read, and a concurrent PATCH may have changed that row since (one switching
    `type` to PERCENTAGE, another raising `discount` to 150: each valid alone). A request that
    changes nothing leaves `updated_at` alone and records no event.
    """
    with transaction.atomic(durable=True):
        coupon = _coupon_lock(coupon)
        merged = {name: changes.get(name, getattr(coupon, name)) for name in ("type", "discount")}
        if discount_exceeds_type(**merged):
            raise ValidationFailed.field("discount", PERCENTAGE_DISCOUNT_RULE)
        changed = {name: value for name, value in changes.items() if getattr(coupon, name) != value}
        if not changed:
            return coupon
        for name, value in changed.items():
            setattr(coupon, name, value)
        coupon.updated_at = timezone.now()
        _coupon_save_with_live_code(coupon)
        record(store=coupon.store, type="coupon.updated", subject=coupon, data={})
    return coupon


def coupon_delete(*, coupon: Coupon) -> Coupon:
    """Soft delete: the row stays (listed with trashed filters); the code becomes free."""
    with transaction.atomic(durable=True):
        coupon = _coupon_lock(coupon)
        coupon.deleted_at = coupon.updated_at = timezone.now()
        coupon.save(update_fields=["deleted_at", "updated_at"])
        record(store=coupon.store, type="coupon.deleted", subject=coupon, data={})
    return coupon


def coupon_restore(*, coupon: Coupon) -> Coupon:
    """Undoes a soft delete (admin); refused while a live coupon holds the same code.

    The journal has no restore type: a restore is recorded as `coupon.updated`.
    """
    with transaction.atomic(durable=True):
        coupon = _coupon_lock(coupon, deleted=True)
        coupon.deleted_at = None
        coupon.updated_at = timezone.now()
        _coupon_save_with_live_code(coupon)
        record(store=coupon.store, type="coupon.updated", subject=coupon, data={})
    return coupon


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
        Coupon.objects.live()
        .alias(code_lower=Lower("code"))
        .filter(store=store, code_lower=code.lower())
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
        Coupon.objects.live()
        .filter(pk=coupon.pk)
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
