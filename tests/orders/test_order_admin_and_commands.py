import io

import pytest
from django.core.management import CommandError, call_command

from events.models import Event
from orders.admin import OrderPlaceForm
from orders.models import Order
from orders.services import order_complete, order_place
from tests.admin_users import post_action, staff_client_with
from tests.factories import CouponFactory

pytestmark = pytest.mark.django_db


def test_admin_complete_order_action_completes_through_the_service(admin_client, store):
    # given
    pending = order_place(store=store, subtotal_cents=500)
    done = order_place(store=store, subtotal_cents=600)
    order_complete(order=done)
    # when
    response = admin_client.post(
        "/admin/orders/order/",
        {"action": "complete_orders", "_selected_action": [pending.pk, done.pk]},
        follow=True,
    )
    # then
    assert response.status_code == 200
    pending.refresh_from_db()
    assert pending.status == Order.STATUS_COMPLETED
    assert Event.objects.filter(type="order.completed", subject_id=str(pending.pk)).count() == 1
    assert Event.objects.count() == 2  # the already-completed order recorded nothing new
    messages = [str(m) for m in response.context["messages"]]
    assert any("Completed 1 order" in m for m in messages)
    assert any(f"Order {done.pk}" in m for m in messages)


def test_events_are_browsable_read_only_in_the_admin(admin_client, store):
    order = order_place(store=store, subtotal_cents=500)
    order_complete(order=order)
    event = Event.objects.get()
    listing = admin_client.get(
        "/admin/events/event/",
        {
            "type__exact": "order.completed",
            "subject_type__exact": "order",
            "store__id__exact": store.pk,
        },
    )
    assert listing.status_code == 200
    assert event.id in listing.content.decode()
    assert admin_client.get(f"/admin/events/event/{event.pk}/change/").status_code == 200
    assert admin_client.get("/admin/events/event/add/").status_code == 403
    assert admin_client.post(f"/admin/events/event/{event.pk}/delete/").status_code == 403


def test_simulate_orders_places_and_completes(store):
    out = io.StringIO()
    call_command(
        "simulate_orders", "--store", store.slug, "--count", "120", "--seed", "1", stdout=out
    )
    assert Order.objects.filter(store=store, status="completed").count() == 120
    assert Event.objects.filter(store=store, type="order.completed").count() == 120
    assert "120 orders placed" in out.getvalue()


def test_simulate_orders_can_leave_orders_pending(store):
    out = io.StringIO()
    call_command(
        "simulate_orders", "--store", store.slug, "--count", "5", "--pending", "1", stdout=out
    )
    assert Order.objects.filter(status="pending").count() == 5
    assert not Event.objects.exists()


def test_simulate_orders_applies_a_coupon_until_it_is_used_up(store):
    CouponFactory(store=store, code="TWICE", limit=2)
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "simulate_orders",
        "--store",
        store.slug,
        "--count",
        "3",
        "--coupon",
        "twice",
        stdout=out,
        stderr=err,
    )
    assert Order.objects.filter(coupon__code="TWICE").count() == 2
    assert "usage limit" in err.getvalue()
    assert "2 orders placed" in out.getvalue()


def test_simulate_orders_refuses_an_unknown_store():
    with pytest.raises(CommandError):
        call_command("simulate_orders", "--store", "missing", "--count", "1")


def test_admin_add_places_the_order_through_the_service(admin_client, store):
    coupon = CouponFactory(store=store, code="TENOFF", discount=10)
    response = admin_client.post(
        "/admin/orders/order/add/",
        {"store": store.pk, "subtotal_cents": 5000, "currency": "USD", "coupon_code": "tenoff"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    order = Order.objects.get()
    assert (order.status, order.discount_cents, order.total_cents) == ("pending", 1000, 4000)
    coupon.refresh_from_db()
    assert coupon.times_used == 1


def test_admin_add_takes_a_coupon_code_as_long_as_a_coupon_may_have(admin_client, store):
    code = "LONG" * 60  # 240 characters (coupon codes take up to 255)
    CouponFactory(store=store, code=code, discount=10)
    response = admin_client.post(
        "/admin/orders/order/add/",
        {"store": store.pk, "subtotal_cents": 5000, "currency": "USD", "coupon_code": code},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Order.objects.get().discount_cents == 1000


def test_admin_add_shows_a_refused_coupon_as_a_form_error(admin_client, store):
    response = admin_client.post(
        "/admin/orders/order/add/",
        {"store": store.pk, "subtotal_cents": 5000, "currency": "USD", "coupon_code": "NOPE"},
    )
    assert response.status_code == 200
    assert "is not a coupon of this store" in response.content.decode()
    assert not Order.objects.exists()


def test_admin_order_change_page_is_read_only(admin_client, store):
    order = order_place(store=store, subtotal_cents=100)
    page = admin_client.get(f"/admin/orders/order/{order.pk}/change/")
    assert page.status_code == 200
    assert 'name="total_cents"' not in page.content.decode()


ORDERS = "/admin/orders/order/"


def test_view_only_staff_cannot_complete_an_order(store):
    order = order_place(store=store, subtotal_cents=500)
    viewer = staff_client_with("orders.view_order")
    assert viewer.get(ORDERS).status_code == 200

    post_action(viewer, ORDERS, "complete_orders", [order.pk])

    order.refresh_from_db()
    assert order.status == Order.STATUS_PENDING
    assert not Event.objects.exists()


def test_staff_with_the_change_permission_complete_an_order(store):
    order = order_place(store=store, subtotal_cents=500)
    editor = staff_client_with("orders.view_order", "orders.change_order")

    post_action(editor, ORDERS, "complete_orders", [order.pk])

    order.refresh_from_db()
    assert order.status == Order.STATUS_COMPLETED
    assert Event.objects.filter(type="order.completed", subject_id=str(order.pk)).count() == 1


def test_validating_the_order_form_places_nothing(store):
    # given: a valid order with a usable coupon
    coupon = CouponFactory(store=store, code="ONCE", limit=1)
    form = OrderPlaceForm(
        data={"store": store.pk, "subtotal_cents": 5000, "currency": "USD", "coupon_code": "ONCE"}
    )
    # when
    assert form.is_valid(), form.errors
    # then
    assert not Order.objects.exists()
    coupon.refresh_from_db()
    assert coupon.times_used == 0


def test_staff_with_the_add_permission_place_an_order(store):
    creator = staff_client_with("orders.view_order", "orders.add_order")
    response = creator.post(
        f"{ORDERS}add/", {"store": store.pk, "subtotal_cents": 700, "currency": "EUR"}
    )
    assert response.status_code == 302
    assert Order.objects.get().total_cents == 700


def test_admin_add_shows_a_used_up_coupon_with_the_submitted_values(admin_client, store):
    # given
    coupon = CouponFactory(store=store, code="GONE", limit=1, times_used=1)
    # when
    response = admin_client.post(
        f"{ORDERS}add/",
        {"store": store.pk, "subtotal_cents": 4321, "currency": "USD", "coupon_code": "GONE"},
    )
    # then: the form again, with the refusal and what was entered; nothing written
    assert response.status_code == 200
    page = response.content.decode()
    assert "has reached its usage limit" in page
    assert 'value="4321"' in page
    assert not Order.objects.exists()
    coupon.refresh_from_db()
    assert coupon.times_used == 1


def test_admin_add_shows_a_currency_the_service_refuses_on_its_field(admin_client, store):
    response = admin_client.post(
        f"{ORDERS}add/", {"store": store.pk, "subtotal_cents": 100, "currency": "usd"}
    )
    assert response.status_code == 200
    assert "must be a three-letter uppercase ISO 4217 code" in response.content.decode()
    assert not Order.objects.exists()
