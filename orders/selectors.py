from config.api.errors import NotFound
from orders.models import Order


def orders_of_store(*, store):
    """The store's orders as its invoice lists show them: newest first."""
    return Order.objects.filter(store=store).order_by("-id")


def order_get(*, store, order_id: int) -> Order:
    """One order of `store`; another store's or an unknown id is 404 (not revealed)."""
    order = Order.objects.filter(store=store, pk=order_id).first()
    if order is None:
        raise NotFound("No such order in this store.")
    return order
