"""The journal's sources end to end: the coupon API and order completion record their types."""

import pytest

from orders.services import order_complete, order_place
from tests.events.helpers import poll_all

pytestmark = pytest.mark.django_db(transaction=True)


def test_coupon_api_changes_are_journaled_with_the_coupon_as_subject(auth_client, store):
    # when a coupon is created, updated and deleted through the v1 API
    created = auth_client.post(
        "/api/v1/coupons",
        {"code": "SPRING", "type": "PERCENTAGE", "discount": 10, "store_wide": True},
        format="json",
    )
    assert created.status_code == 201, created.json()
    coupon_id = created.json()["id"]
    patched = auth_client.patch(f"/api/v1/coupons/{coupon_id}", {"discount": 20}, format="json")
    assert patched.status_code == 200
    assert auth_client.delete(f"/api/v1/coupons/{coupon_id}").status_code == 204
    # then
    events, _ = poll_all(auth_client, params={"subject_type": "coupon"})
    assert [e["type"] for e in events] == ["coupon.created", "coupon.updated", "coupon.deleted"]
    for event in events:
        assert event["subject"] == {"type": "coupon", "id": str(coupon_id)}
        assert event["data"] == {}
        assert event["version"] == 1


def test_completing_an_order_with_a_coupon_reports_the_discounted_total(auth_client, store):
    from tests.factories import CouponFactory

    CouponFactory(store=store, code="FIVE", discount=5)
    order = order_place(store=store, subtotal_cents=3000, currency="USD", coupon_code="FIVE")
    order_complete(order=order)
    events, _ = poll_all(auth_client, url=f"/api/v2/orders/{order.pk}/events")
    assert [e["data"] for e in events] == [{"total_cents": 2500, "currency": "USD"}]
