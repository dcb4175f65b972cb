import pytest

from orders.services import order_complete, order_place
from tests.events.helpers import record_committed

pytestmark = pytest.mark.django_db(transaction=True)


def test_order_events_lists_only_that_orders_events(auth_client, store):
    # given two completed orders and a coupon event
    first = order_place(store=store, subtotal_cents=100)
    second = order_place(store=store, subtotal_cents=200)
    order_complete(order=first)
    order_complete(order=second)
    record_committed(store, subject=("coupon", str(first.pk)))
    # when
    response = auth_client.get(f"/api/v2/orders/{first.pk}/events")
    # then
    assert response.status_code == 200
    body = response.json()
    assert [(e["type"], e["subject"]["id"]) for e in body["data"]] == [
        ("order.completed", str(first.pk))
    ]
    assert body["data"][0]["data"] == {"total_cents": 100, "currency": "USD"}
    assert body["meta"]["has_more"] is False
    assert body["meta"]["retention_days"] == 30
    cursor = body["meta"]["next_cursor"]
    assert (
        auth_client.get(f"/api/v2/orders/{first.pk}/events", {"cursor": cursor}).json()["data"]
        == []
    )


def test_order_events_cursor_is_bound_to_the_order(auth_client, store):
    first = order_place(store=store, subtotal_cents=100)
    second = order_place(store=store, subtotal_cents=200)
    cursor = auth_client.get(f"/api/v2/orders/{first.pk}/events").json()["meta"]["next_cursor"]
    other_order = auth_client.get(f"/api/v2/orders/{second.pk}/events", {"cursor": cursor})
    assert other_order.status_code == 409
    whole_journal = auth_client.get("/api/v2/events", {"cursor": cursor})
    assert whole_journal.status_code == 409


def test_another_stores_or_unknown_order_is_404(auth_client, other_store):
    theirs = order_place(store=other_store, subtotal_cents=100)
    for path in (
        f"/api/v2/orders/{theirs.pk}/events",
        "/api/v2/orders/987654/events",
        "/api/v2/orders/99999999999999999999999/events",
    ):
        response = auth_client.get(path)
        assert response.status_code == 404, path
        assert response.json()["code"] == "resource_not_found"


def test_order_events_limit_is_validated(auth_client, store):
    order = order_place(store=store, subtotal_cents=100)
    response = auth_client.get(f"/api/v2/orders/{order.pk}/events", {"limit": "101"})
    assert response.status_code == 422
    assert response.json()["param"] == "limit"
