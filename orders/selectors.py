from core.api.errors import NotFound
from orders.models import Order


def order_get(*, store, order_id: int) -> Order:
    """One order of `store`; another store's or an unknown id is 404 (not revealed)."""
    order = Order.objects.filter(store=store, pk=order_id).first()
    if order is None:
        raise NotFound("No such order in this store.")
    return order


def order_journal_filters(*, store, order_id: int) -> dict[str, str]:
    """The journal filters of one order of the store (404 for an unknown or foreign order).

    `/api/v2/orders/{order}/events` is `/api/v2/events` under exactly these filters, so the
    cursors of one work on the other with the same filters (events/cursors.py binds them).
    """
    order = order_get(store=store, order_id=order_id)
    return {"subject_type": "order", "subject_id": str(order.pk)}
