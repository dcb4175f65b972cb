import pytest
from django.utils.dateparse import parse_datetime

from orders.services import order_complete, order_place
from tests.factories import make_api_key

pytestmark = pytest.mark.django_db


@pytest.fixture
def orders(store):
    placed = [order_place(store=store, subtotal_cents=100 * (n + 1)) for n in range(3)]
    order_complete(order=placed[0])
    return placed


def test_v1_invoices_have_integer_ids_and_the_paginated_envelope(auth_client, orders):
    response = auth_client.get("/api/v1/invoices", {"limit": 2})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"data", "links", "meta"}
    assert [i["id"] for i in body["data"]] == [orders[2].pk, orders[1].pk]
    invoice = body["data"][0]
    assert set(invoice) == {"id", "status", "total_cents", "currency", "created_at"}
    assert invoice["status"] == "pending"
    assert invoice["total_cents"] == 300
    assert invoice["currency"] == "USD"
    assert parse_datetime(invoice["created_at"]) is not None
    assert body["meta"]["total"] == 3
    assert body["meta"]["per_page"] == 2
    assert body["meta"]["last_page"] == 2
    assert body["links"]["next"].endswith("page=2")


def test_v2_invoices_have_string_ids(auth_client, orders):
    response = auth_client.get("/api/v2/invoices")
    assert response.status_code == 200
    body = response.json()
    assert [i["id"] for i in body["data"]] == [str(o.pk) for o in reversed(orders)]
    assert body["data"][-1]["status"] == "completed"
    assert body["meta"]["per_page"] == 15


@pytest.mark.parametrize("path", ["/api/v1/invoices", "/api/v2/invoices"])
def test_invoices_of_other_stores_are_not_listed(auth_client, orders, other_store, path):
    order_place(store=other_store, subtotal_cents=999)
    body = auth_client.get(path).json()
    assert body["meta"]["total"] == 3
    assert 999 not in [i["total_cents"] for i in body["data"]]


@pytest.mark.parametrize("path", ["/api/v1/invoices", "/api/v2/invoices"])
@pytest.mark.parametrize("limit", ["0", "101", "x"])
def test_invoice_limit_out_of_range_is_422(auth_client, path, limit):
    response = auth_client.get(path, {"limit": limit})
    assert response.status_code == 422
    assert response.json()["param"] == "limit"


@pytest.mark.parametrize("path", ["/api/v1/invoices", "/api/v2/invoices"])
def test_invoice_ability_is_required(user, store, path, client_for):
    client = client_for(make_api_key(user, abilities=["event"]))
    response = client.get(path)
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"


def test_v2_invoices_follow_x_store(user, store, other_store, client_for):
    from tests.factories import MembershipFactory

    MembershipFactory(user=user, store=other_store)
    order_place(store=other_store, subtotal_cents=777)
    client = client_for(make_api_key(user))
    body = client.get("/api/v2/invoices", HTTP_X_STORE=other_store.slug).json()
    assert [i["total_cents"] for i in body["data"]] == [777]
    assert client.get("/api/v2/invoices", HTTP_X_STORE="nope").status_code == 403


def test_unauthenticated_invoice_list_is_401(api_client):
    assert api_client.get("/api/v1/invoices").status_code == 401
    assert api_client.get("/api/v2/invoices").status_code == 401
