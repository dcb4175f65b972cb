"""POST /api/v{1,2}/coupons/search: the Orion body over the list's queryset,
FilterSet and paginator; a coupon:read key may search; what it may not name is a 422."""

import pytest
from django.utils import timezone

from accounts.abilities import ROLE_STAFF
from tests.factories import CouponFactory, MembershipFactory, make_api_key

pytestmark = pytest.mark.django_db


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [coupon["id"] for coupon in response.json()["data"]]


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_filters_search_and_sort_with_laravel_pages(version, store, auth_client):
    five = CouponFactory(store=store, code="SUMMER5", discount=5)
    ten = CouponFactory(store=store, code="summer10", discount=10)
    fifty = CouponFactory(store=store, code="SUMMER50", type="PERCENTAGE", discount=50)
    CouponFactory(store=store, code="WINTER10", discount=10)
    body = {
        "filters": [
            {"field": "discount", "operator": ">=", "value": "10"},
            {"type": "or", "nested": [{"field": "code", "operator": "=", "value": "SUMMER5"}]},
        ],
        "search": {"value": "summer", "case_sensitive": False},
        "sort": [{"field": "discount", "direction": "desc"}],
    }

    first = auth_client.post(f"/api/{version}/coupons/search?limit=2", body, format="json")
    second = auth_client.post(f"/api/{version}/coupons/search?limit=2&page=2", body, format="json")

    assert ids(first) == [fifty.id, ten.id]
    assert ids(second) == [five.id]
    meta = first.json()["meta"]
    assert (meta["total"], meta["last_page"], meta["per_page"]) == (3, 2, 2)
    assert first.json()["links"]["next"].endswith(f"/api/{version}/coupons/search?limit=2&page=2")


def test_an_empty_body_is_the_list(store, auth_client):
    coupons = [CouponFactory(store=store) for _ in range(3)]
    searched = auth_client.post("/api/v1/coupons/search", {}, format="json")
    listed = auth_client.get("/api/v1/coupons")
    assert ids(searched) == [c.id for c in coupons]
    assert searched.json()["data"] == listed.json()["data"]
    assert searched.json()["meta"]["total"] == listed.json()["meta"]["total"] == 3


def test_trashed_parameters_are_the_lists(store, auth_client):
    live = CouponFactory(store=store, code="LIVE")
    gone = CouponFactory(store=store, code="GONE", deleted_at=timezone.now())
    body = {"sort": [{"field": "code", "direction": "asc"}]}

    assert ids(auth_client.post("/api/v1/coupons/search", body, format="json")) == [live.id]
    with_trashed = auth_client.post("/api/v1/coupons/search?with_trashed=true", body, format="json")
    only_trashed = auth_client.post("/api/v1/coupons/search?only_trashed=1", body, format="json")
    bad = auth_client.post("/api/v1/coupons/search?only_trashed=yes", body, format="json")
    assert ids(with_trashed) == [gone.id, live.id]
    assert ids(only_trashed) == [gone.id]
    assert (bad.status_code, bad.json()["param"]) == (422, "only_trashed")


def test_new_fields_are_searchable(store, auth_client):
    capped = CouponFactory(store=store, type="PERCENTAGE", discount=10, maximum_discount_amount=5)
    CouponFactory(store=store)
    subs = CouponFactory(store=store, applies_to="subscriptions", subscription_payments=6)
    body = {
        "filters": [
            {"field": "maximum_discount_amount", "operator": "!=", "value": None},
            {"type": "or", "field": "subscription_payments", "operator": ">", "value": 3},
        ]
    }
    found = auth_client.post("/api/v1/coupons/search", body, format="json")
    by_kind = auth_client.post(
        "/api/v1/coupons/search",
        {"filters": [{"field": "applies_to", "operator": "in", "value": ["subscriptions"]}]},
        format="json",
    )
    assert ids(found) == [capped.id, subs.id]
    assert ids(by_kind) == [subs.id]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"filters": [{"field": "times_used", "operator": ">", "value": 1}]}, "filters.0.field"),
        ({"filters": [{"field": "store", "value": 1}]}, "filters.0.field"),
        ({"filters": [{"field": "products", "value": [1]}]}, "filters.0.field"),
        ({"filters": [{"field": "code", "operator": "~", "value": "A"}]}, "filters.0.operator"),
        ({"filters": [{"field": "discount", "value": "ten"}]}, "filters.0.value"),
        ({"sort": [{"field": "secret", "direction": "asc"}]}, "sort.0.field"),
        ({"search": {"value": 5}}, "search.value"),
        ({"includes": [{"relation": "store"}]}, "includes"),
        ({"filters": "code"}, "filters"),
    ],
)
def test_what_a_search_may_not_name_is_a_422_naming_it(body, param, auth_client):
    response = auth_client.post("/api/v1/coupons/search", body, format="json")
    assert response.status_code == 422, response.content
    assert response.json()["param"] == param


def test_a_read_only_credential_may_search_but_not_write(user, store, client_for):
    CouponFactory(store=store)
    staff = MembershipFactory(store=store, role=ROLE_STAFF).user
    client = client_for(make_api_key(staff))

    searched = client.post("/api/v1/coupons/search", {}, format="json")
    created = client.post("/api/v1/coupons/batch", {"resources": []}, format="json")

    assert searched.status_code == 200
    assert created.status_code == 403


def test_the_total_counts_the_matching_rows_on_every_page(store, auth_client):
    CouponFactory.create_batch(3, store=store, type="PERCENTAGE", discount=10)
    CouponFactory.create_batch(2, store=store)
    body = {"filters": [{"field": "type", "operator": "=", "value": "PERCENTAGE"}]}

    for page, rows in ((1, 2), (2, 1), (9, 0)):
        response = auth_client.post(
            f"/api/v1/coupons/search?limit=2&page={page}", body, format="json"
        )
        assert len(ids(response)) == rows
        assert (response.json()["meta"]["total"], response.json()["meta"]["last_page"]) == (3, 2)
