"""The journal and invoice lists with the CLI's OAuth access token (X-STORE required)."""

import pytest

from orders.services import order_place
from tests.events.helpers import record_committed

pytestmark = pytest.mark.django_db(transaction=True)


def test_oauth_token_reads_the_journal_of_the_store_named_by_x_store(oauth_client, store):
    event = record_committed(store)
    response = oauth_client.get("/api/v2/events", HTTP_X_STORE=store.slug)
    assert response.status_code == 200
    assert [e["id"] for e in response.json()["data"]] == [event.id]


def test_oauth_token_without_x_store_is_400(oauth_client, store):
    response = oauth_client.get("/api/v2/events")
    assert response.status_code == 400
    assert response.json()["param"] == "X-STORE"


def test_oauth_token_on_another_users_store_is_403(oauth_client, other_store):
    response = oauth_client.get("/api/v2/events", HTTP_X_STORE=other_store.slug)
    assert response.status_code == 403


def test_oauth_token_lists_v2_invoices_but_not_v1(oauth_client, store):
    order_place(store=store, subtotal_cents=100)
    v2 = oauth_client.get("/api/v2/invoices", HTTP_X_STORE=store.slug)
    assert v2.status_code == 200
    assert v2.json()["meta"]["total"] == 1
    v1 = oauth_client.get("/api/v1/invoices", HTTP_X_STORE=store.slug)
    assert v1.status_code == 403
    assert v1.json()["code"] == "forbidden"
