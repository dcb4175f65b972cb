import re

from django.db import transaction
from django.utils import timezone

from core.api.errors import Conflict, ValidationFailed
from coupons.services import coupon_apply
from events.services import record
from orders.models import Order

CURRENCY_PATTERN = re.compile(r"^[A-Z]{3}$")


# Not durable: placing an order may be part of a larger transaction (the admin's add view).
@transaction.atomic
def order_place(
    *, store, subtotal_cents: int, currency: str = "USD", coupon_code: str | None = None
) -> Order:
    """Creates a pending order, applying `coupon_code` (counted once, atomically) if given."""
    if type(subtotal_cents) is not int or subtotal_cents < 0:
        raise ValidationFailed.field("subtotal_cents", "must be a non-negative integer")
    if not isinstance(currency, str) or not CURRENCY_PATTERN.match(currency):
        raise ValidationFailed.field("currency", "must be a three-letter uppercase ISO 4217 code")
    coupon, discount_cents = None, 0
    if coupon_code:
        application = coupon_apply(store=store, code=coupon_code, order_total_cents=subtotal_cents)
        coupon, discount_cents = application.coupon, application.discount_cents
    return Order.objects.create(
        store=store,
        subtotal_cents=subtotal_cents,
        discount_cents=discount_cents,
        total_cents=subtotal_cents - discount_cents,
        currency=currency,
        coupon=coupon,
    )


@transaction.atomic(durable=True)
def order_complete(*, order: Order) -> Order:
    """Completes a pending order and records `order.completed` in the same transaction."""
    order = Order.objects.select_for_update().get(pk=order.pk)
    if order.status != Order.STATUS_PENDING:
        raise Conflict(f"Order {order.pk} is {order.status}; only pending orders complete.")
    order.status = Order.STATUS_COMPLETED
    order.completed_at = timezone.now()
    order.save(update_fields=["status", "completed_at", "updated_at"])
    record(
        store=order.store,
        type="order.completed",
        subject=order,
        data={"total_cents": order.total_cents, "currency": order.currency},
    )
    return order
