"""GET /api/v2/stores and /api/v2/stores/{store}: only id, slug and name; others' stores hidden.
The list is every accessible store in `data`, not a page (docs/design.md "Pagination")."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import MembershipFactory, make_api_key

pytestmark = pytest.mark.django_db


def test_list_shows_the_users_stores_with_id_slug_name_only(user, store, auth_client, other_store):
    second = MembershipFactory(user=user).store
    body = auth_client.get("/api/v2/stores").json()
    assert body == {
        "data": [
            {"id": str(store.id), "slug": store.slug, "name": store.name},
            {"id": str(second.id), "slug": second.slug, "name": second.name},
        ]
    }


def test_list_is_every_accessible_store_not_a_page(user, store, auth_client, other_store):
    # given: more stores than a default page (15) holds
    stores = [store, *(MembershipFactory(user=user).store for _ in range(39))]
    # when
    body = auth_client.get("/api/v2/stores").json()
    # then: all of them, by id, and no pagination members
    assert set(body) == {"data"}
    assert [s["id"] for s in body["data"]] == [str(s.id) for s in stores]


@pytest.mark.parametrize("query", [{"limit": 1, "page": 2}, {"limit": "x", "page": "0"}])
def test_limit_and_page_are_ignored_like_any_unknown_parameter(query, user, store, auth_client):
    stores = [store, *(MembershipFactory(user=user).store for _ in range(2))]
    response = auth_client.get("/api/v2/stores", query)
    assert response.status_code == 200
    assert [s["id"] for s in response.json()["data"]] == [str(s.id) for s in stores]


def test_list_of_a_key_with_selected_stores_is_only_those(user, client_for):
    # given: 40 stores of the user, a key restricted to three of them
    stores = [MembershipFactory(user=user).store for _ in range(40)]
    selected = [stores[3], stores[17], stores[39]]
    client = client_for(make_api_key(user, store_access="selected", stores=selected))
    # when
    body = client.get("/api/v2/stores").json()
    # then
    assert [s["slug"] for s in body["data"]] == [s.slug for s in selected]


def test_list_costs_the_same_queries_for_one_store_as_for_forty(user, store, auth_client):
    auth_client.get("/api/v2/stores")  # warm-up: content types and the like
    with CaptureQueriesContext(connection) as one:
        auth_client.get("/api/v2/stores")
    for _ in range(39):
        MembershipFactory(user=user)
    with CaptureQueriesContext(connection) as forty:
        assert len(auth_client.get("/api/v2/stores").json()["data"]) == 40
    assert len(forty) == len(one)


def test_schema_of_the_list_has_no_pagination(schema):
    operation = schema["paths"]["/api/v2/stores"]["get"]
    assert "parameters" not in operation
    envelope = operation["responses"]["200"]["content"]["application/json"]["schema"]
    name = envelope["$ref"].rsplit("/", 1)[1]
    component = schema["components"]["schemas"][name]
    assert set(component["properties"]) == {"data"}
    assert component["properties"]["data"]["type"] == "array"
    # the path parameter keeps the spec's name and type
    [parameter] = schema["paths"]["/api/v2/stores/{store}"]["get"]["parameters"]
    assert (parameter["name"], parameter["schema"]["type"]) == ("store", "integer")


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


@pytest.mark.parametrize("store_id", ["abc", "-1", "1.0", "%EF%BC%91"])  # the last: a full-width 1
def test_non_numeric_store_id_is_404(store_id, store, auth_client):
    response = auth_client.get(f"/api/v2/stores/{store_id}")
    assert response.status_code == 404
    assert response.json()["code"] == "resource_not_found"


def test_store_reads_need_account_read(user, store, client_for):
    client = client_for(make_api_key(user, abilities=["coupon"]))
    assert client.get("/api/v2/stores").status_code == 403
    assert client.get(f"/api/v2/stores/{store.id}").status_code == 403
