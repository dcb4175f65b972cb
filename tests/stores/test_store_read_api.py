"""GET /api/v2/stores and /api/v2/stores/{store}: only id, slug and name; others' stores hidden."""

import pytest

from tests.factories import MembershipFactory, make_api_key

pytestmark = pytest.mark.django_db


def test_list_shows_the_users_stores_with_id_slug_name_only(user, store, auth_client, other_store):
    second = MembershipFactory(user=user).store
    body = auth_client.get("/api/v2/stores").json()
    assert body["data"] == [
        {"id": str(store.id), "slug": store.slug, "name": store.name},
        {"id": str(second.id), "slug": second.slug, "name": second.name},
    ]
    assert set(body) == {"data", "links", "meta"}
    assert body["meta"]["total"] == 2


def test_detail_shows_id_slug_name_only(store, auth_client):
    response = auth_client.get(f"/api/v2/stores/{store.id}")
    assert response.status_code == 200
    assert response.json() == {
        "data": {"id": str(store.id), "slug": store.slug, "name": store.name}
    }


@pytest.mark.parametrize("store_id", ["other", "999999", "99999999999999999999999"])
def test_inaccessible_or_unknown_store_is_404(store_id, auth_client, other_store):
    path_id = other_store.id if store_id == "other" else store_id
    response = auth_client.get(f"/api/v2/stores/{path_id}")
    assert response.status_code == 404
    assert response.json()["code"] == "resource_not_found"


def test_non_numeric_store_id_is_404(auth_client):
    assert auth_client.get("/api/v2/stores/abc").status_code == 404


def test_store_reads_need_account_read(user, store, client_for):
    client = client_for(make_api_key(user, abilities=["coupon"]))
    assert client.get("/api/v2/stores").status_code == 403
    assert client.get(f"/api/v2/stores/{store.id}").status_code == 403
