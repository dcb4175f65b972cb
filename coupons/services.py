"""Coupon writes: create, update, soft delete, restore, and applying a coupon to an order."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.db.models.functions import Lower
from django.utils import timezone

from core.api.errors import NotFound, ValidationFailed
from coupons.models import (
    COUPON_DEFAULTS,
    TIED_FIELDS,
    Coupon,
    coupon_rule_errors,
    coupon_settle,
)
from coupons.selectors import coupons_get_many
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


def _coupon_insert(coupon: Coupon) -> None:
    """Saves a new coupon and records its creation (inside the caller's transaction)."""
    _coupon_save_with_live_code(coupon)
    record(store=coupon.store, type="coupon.created", subject=coupon, data={})


def _coupon_new(store: Store, values: Mapping[str, Any]) -> Coupon:
    now = timezone.now()
    state = coupon_settle({**COUPON_DEFAULTS, **values})
    return Coupon(store=store, **state, created_at=now, updated_at=now)


def coupon_create(*, store: Store, **values: Any) -> Coupon:
    """Creates a coupon from values that passed CouponWriteSerializer's rules (code, type,
    discount, store_wide and any of COUPON_DEFAULTS' fields)."""
    coupon = _coupon_new(store, values)
    with transaction.atomic(durable=True):
        _coupon_insert(coupon)
    return coupon


def _coupon_change(coupon: Coupon, changes: Mapping[str, Any], *, replace: bool) -> Coupon:
    """Applies `changes` to the locked `coupon` (inside the caller's transaction): a PATCH's
    fields over the stored ones, or (`replace`) a PUT's over COUPON_DEFAULTS.

    The merged coupon is checked again on the locked row: the serializer checked it against
    the row it read, and a concurrent write may have changed that row since (one switching
    `type` to PERCENTAGE, another raising `discount` to 150: each valid alone). A request that
    changes nothing leaves `updated_at` alone and records no event.
    """
    current = {name: getattr(coupon, name) for name in TIED_FIELDS}
    if replace:
        wanted = coupon_settle({**COUPON_DEFAULTS, **changes})
    else:
        merged = coupon_settle({**current, **changes})
        wanted = {**changes, "subscription_payments": merged["subscription_payments"]}
    if errors := coupon_rule_errors({**current, **wanted}):
        raise ValidationFailed(errors)
    changed = {name: value for name, value in wanted.items() if getattr(coupon, name) != value}
    if not changed:
        return coupon
    for name, value in changed.items():
        setattr(coupon, name, value)
    coupon.updated_at = timezone.now()
    _coupon_save_with_live_code(coupon)
    record(store=coupon.store, type="coupon.updated", subject=coupon, data={})
    return coupon


def coupon_update(*, coupon: Coupon, changes: Mapping[str, Any]) -> Coupon:
    """PATCH: applies `changes` (writable fields that passed the serializer's rules)."""
    with transaction.atomic(durable=True):
        return _coupon_change(_coupon_lock(coupon), changes, replace=False)


def coupon_replace(*, coupon: Coupon, values: Mapping[str, Any]) -> Coupon:
    """PUT: the coupon becomes `values`, the fields they omit back at COUPON_DEFAULTS."""
    with transaction.atomic(durable=True):
        return _coupon_change(_coupon_lock(coupon), values, replace=True)


def _coupon_soft_delete(coupon: Coupon) -> Coupon:
    coupon.deleted_at = coupon.updated_at = timezone.now()
    coupon.save(update_fields=["deleted_at", "updated_at"])
    record(store=coupon.store, type="coupon.deleted", subject=coupon, data={})
    return coupon


def coupon_delete(*, coupon: Coupon) -> Coupon:
    """Soft delete: the row stays (listed with trashed filters); the code becomes free."""
    with transaction.atomic(durable=True):
        return _coupon_soft_delete(_coupon_lock(coupon))


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


# Batches (docs/decisions/coupons.md "Batches"): all or nothing in one transaction, each
# coupon written and journalled as its single write would be; an error names the resource
# (`resources.<i>` of a list, `resources.<id>` of an update) and its field.
BATCH_MAX = 100


def _in_resource(key, error: ValidationFailed) -> ValidationFailed:
    return ValidationFailed(
        {f"resources.{key}.{field}": messages for field, messages in (error.errors or {}).items()}
    )


def coupon_batch_create(*, store: Store, resources: list[Mapping[str, Any]]) -> list[Coupon]:
    """Creates every coupon of `resources` (each passed CouponWriteSerializer), or none."""
    coupons = [_coupon_new(store, values) for values in resources]
    with transaction.atomic(durable=True):
        for index, coupon in enumerate(coupons):
            try:
                _coupon_insert(coupon)
            except ValidationFailed as error:
                raise _in_resource(index, error) from None
    return coupons


def coupon_batch_update(
    *, store: Store, resources: Mapping[int, Mapping[str, Any]]
) -> list[Coupon]:
    """Applies each coupon id's changes, as PATCH would, or none of them."""
    with transaction.atomic(durable=True):
        coupons = coupons_get_many(
            store=store, keyed_ids={coupon_id: coupon_id for coupon_id in resources}, lock=True
        )
        updated = []
        for coupon_id, changes in resources.items():
            try:
                updated.append(_coupon_change(coupons[coupon_id], changes, replace=False))
            except ValidationFailed as error:
                raise _in_resource(coupon_id, error) from None
    return updated


def coupon_batch_delete(*, store: Store, coupon_ids: list[int]) -> list[Coupon]:
    """Soft-deletes each listed live coupon of `store`, or none of them."""
    with transaction.atomic(durable=True):
        coupons = coupons_get_many(store=store, keyed_ids=dict(enumerate(coupon_ids)), lock=True)
        return [_coupon_soft_delete(coupons[index]) for index in range(len(coupon_ids))]


@dataclass(frozen=True)
class CouponApplication:
    coupon: Coupon
    discount_cents: int  # never more than the order total


def coupon_discount_cents(coupon: Coupon, order_total_cents: int) -> int:
    """PERCENTAGE rounds down to the cent and stops at `maximum_discount_amount`; AMOUNT is
    dollars with cents; capped at the total."""
    if coupon.type == Coupon.TYPE_PERCENTAGE:
        discount = int(order_total_cents * coupon.discount // 100)
        if coupon.maximum_discount_amount is not None:
            discount = min(discount, int(coupon.maximum_discount_amount * 100))
    else:
        discount = int(coupon.discount * 100)
    return max(0, min(discount, order_total_cents))


def dollars(amount) -> str:
    """`amount` as a message shows it: 20 rather than 20.00, 19.99 as it is."""
    return f"{amount:f}".removesuffix(".00")


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
    if coupon.applies_to == Coupon.APPLIES_TO_SUBSCRIPTIONS:
        # Orders here are one-time purchases: a subscriptions coupon has nothing to discount.
        raise ValidationFailed.field(COUPON_CODE_FIELD, "applies to subscription payments only")
    if coupon.minimum_amount is not None and order_total_cents < coupon.minimum_amount * 100:
        raise ValidationFailed.field(
            COUPON_CODE_FIELD,
            f"needs an order total of at least {dollars(coupon.minimum_amount)} dollars",
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
