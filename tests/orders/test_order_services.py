import pytest
from django.db import connection

from core.api.errors import Conflict, ValidationFailed
from coupons.models import Coupon
from events.models import Event
from orders.models import Order
from orders.services import order_complete, order_place
from tests.factories import CouponFactory

pytestmark = pytest.mark.django_db


def test_order_place_creates_a_pending_order(store):
    order = order_place(store=store, subtotal_cents=1999, currency="EUR")
    order.refresh_from_db()
    assert order.status == Order.STATUS_PENDING
    assert (order.subtotal_cents, order.discount_cents, order.total_cents) == (1999, 0, 1999)
    assert order.currency == "EUR"
    assert order.coupon is None
    assert not Event.objects.exists()


def test_order_place_applies_a_coupon_and_counts_its_use(store):
    coupon = CouponFactory(store=store, code="SAVE5", type=Coupon.TYPE_AMOUNT, discount=5)
    order = order_place(store=store, subtotal_cents=2000, coupon_code="save5")
    assert order.coupon == coupon
    assert (order.discount_cents, order.total_cents) == (500, 1500)
    coupon.refresh_from_db()
    assert coupon.times_used == 1


def test_a_refused_coupon_places_no_order(store):
    CouponFactory(store=store, code="ONCE", limit=1, times_used=1)
    with pytest.raises(ValidationFailed) as refused:
        order_place(store=store, subtotal_cents=2000, coupon_code="ONCE")
    assert refused.value.param == "coupon_code"
    assert not Order.objects.exists()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"subtotal_cents": -1}, "subtotal_cents"),
        ({"subtotal_cents": "100"}, "subtotal_cents"),
        ({"subtotal_cents": 100, "currency": "usd"}, "currency"),
        ({"subtotal_cents": 100, "currency": "EURO"}, "currency"),
    ],
)
def test_order_place_validates_amount_and_currency(store, kwargs, field):
    with pytest.raises(ValidationFailed) as invalid:
        order_place(store=store, **kwargs)
    assert invalid.value.param == field


def test_order_complete_records_order_completed(store):
    order = order_place(store=store, subtotal_cents=4200, currency="USD")
    completed = order_complete(order=order)
    assert completed.status == Order.STATUS_COMPLETED
    assert completed.completed_at is not None
    event = Event.objects.get()
    assert (event.type, event.version) == ("order.completed", 1)
    assert (event.subject_type, event.subject_id) == ("order", str(order.pk))
    assert event.data == {"total_cents": 4200, "currency": "USD"}
    assert event.store_id == store.pk


@pytest.mark.django_db(transaction=True)
def test_the_event_is_written_by_the_transaction_that_completes_the_order(store):
    # given
    order = order_place(store=store, subtotal_cents=100)
    # when
    order_complete(order=order)
    # then: the order row's xmin (the 32-bit xid that last wrote it) is the event's txid
    with connection.cursor() as cursor:
        cursor.execute("SELECT xmin::text::bigint FROM orders_order WHERE id = %s", [order.pk])
        order_xid = cursor.fetchone()[0]
    assert Event.objects.get().txid % 2**32 == order_xid


def test_only_pending_orders_complete(store):
    order = order_place(store=store, subtotal_cents=100)
    order_complete(order=order)
    with pytest.raises(Conflict):
        order_complete(order=order)
    assert Event.objects.count() == 1
