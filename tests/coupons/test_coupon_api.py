"""GET/POST /api/v1/coupons and GET/PATCH/DELETE /api/v1/coupons/{id}: the resource, store
scoping, soft delete, mass-assignment, methods and credentials."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from accounts.abilities import ROLE_STAFF
from coupons.models import Coupon
from tests.factories import CouponFactory, MembershipFactory, StoreFactory, make_api_key

pytestmark = pytest.mark.django_db

FIELDS = {
    "id",
    "code",
    "type",
    "discount",
    "limit",
    "store_wide",
    "minimum_amount",
    "expires_at",
    "created_at",
    "updated_at",
    "store_id",
    "deleted_at",
    "maximum_discount_amount",
    "applies_to",
    "subscription_payments",
    "products",
    "product_variants",
}
UTC_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
VALID = {
    "code": "WELCOME",
    "type": "PERCENTAGE",
    "discount": 15,
    "store_wide": False,
    "products": [101],
}


def test_create_returns_201_and_the_bare_coupon(store, auth_client):
    response = auth_client.post(
        "/api/v1/coupons",
        {**VALID, "limit": 10, "minimum_amount": 20, "expires_at": "2031-05-01T12:00:00+02:00"},
    )

    assert response.status_code == 201
    body = response.json()
    assert set(body) == FIELDS
    coupon = Coupon.objects.get()
    assert body["id"] == coupon.id
    assert body["store_id"] == store.id
    assert (body["code"], body["type"], body["discount"]) == ("WELCOME", "PERCENTAGE", "15.00")
    assert (body["limit"], body["minimum_amount"], body["store_wide"]) == (10, "20.00", False)
    assert (body["products"], body["product_variants"]) == ([101], [])
    assert (body["applies_to"], body["subscription_payments"]) == ("one_time", None)
    assert body["maximum_discount_amount"] is None
    assert body["expires_at"] == "2031-05-01T10:00:00Z"
    assert body["deleted_at"] is None
    assert UTC_TIMESTAMP.match(body["created_at"])
    assert body["updated_at"] == body["created_at"]


# The seed's required fields, and nothing about products (docs/interface.md, POST row).
SEED_REQUIRED = {"code": "NOTYET", "type": "AMOUNT", "discount": 5, "store_wide": False}


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_a_coupon_that_is_not_store_wide_may_start_with_no_products(version, store, auth_client):
    url = f"/api/{version}/coupons"

    created = auth_client.post(url, SEED_REQUIRED)
    assert created.status_code == 201, created.content
    body = created.json() if version == "v1" else created.json()["data"]
    assert (body["store_wide"], body["products"], body["product_variants"]) == (False, [], [])

    # its products are set later, and may be emptied again; a whole replacement may omit them
    single = f"{url}/{body['id']}"
    assert auth_client.patch(single, {"products": [7]}).status_code == 200
    assert auth_client.patch(single, {"products": []}).status_code == 200
    assert auth_client.put(single, {**SEED_REQUIRED, "discount": 6}).status_code == 200
    batch = auth_client.post(f"{url}/batch", {"resources": [{**SEED_REQUIRED, "code": "BATCHED"}]})
    assert batch.status_code == 201, batch.content
    assert Coupon.objects.filter(store_wide=False, products=[], product_variants=[]).count() == 2


def test_retrieve_returns_every_field_with_nulls(store, auth_client):
    coupon = CouponFactory(store=store)
    response = auth_client.get(f"/api/v1/coupons/{coupon.id}")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == FIELDS
    assert body["id"] == coupon.id
    assert isinstance(body["id"], int)
    assert isinstance(body["store_id"], int)
    assert body["limit"] is None
    assert body["minimum_amount"] is None
    assert body["expires_at"] is None
    assert UTC_TIMESTAMP.match(body["updated_at"])


def test_patch_changes_only_the_given_fields_and_bumps_updated_at(store, auth_client):
    created = datetime(2026, 1, 1, tzinfo=UTC)
    coupon = CouponFactory(store=store, discount=5, limit=3, created_at=created, updated_at=created)

    response = auth_client.patch(f"/api/v1/coupons/{coupon.id}", {"discount": 8})

    assert response.status_code == 200
    body = response.json()
    assert body["discount"] == "8.00"
    assert body["limit"] == 3
    assert body["code"] == coupon.code
    assert body["created_at"] == "2026-01-01T00:00:00Z"
    assert body["updated_at"] > body["created_at"]


def test_mass_assignment_of_read_only_fields_is_ignored(store, other_store, auth_client):
    ignored = {
        "id": 999_999,
        "store_id": other_store.id,
        "created_at": "2001-01-01T00:00:00Z",
        "updated_at": "2001-01-01T00:00:00Z",
        "deleted_at": "2001-01-01T00:00:00Z",
        "times_used": 50,
        "unknown": "x",
    }
    created = auth_client.post("/api/v1/coupons", {**VALID, **ignored})
    assert created.status_code == 201
    body = created.json()
    coupon = Coupon.objects.get()
    assert body["id"] == coupon.id != 999_999
    assert coupon.store_id == store.id
    assert coupon.deleted_at is None
    assert coupon.times_used == 0
    assert not body["created_at"].startswith("2001")

    patched = auth_client.patch(f"/api/v1/coupons/{coupon.id}", {**ignored, "discount": 20})
    assert patched.status_code == 200
    coupon.refresh_from_db()
    assert (coupon.store_id, coupon.deleted_at, coupon.times_used) == (store.id, None, 0)
    assert coupon.discount == 20


def test_another_stores_coupon_is_404_for_read_update_and_delete(other_store, auth_client):
    foreign = CouponFactory(store=other_store, discount=5)
    url = f"/api/v1/coupons/{foreign.id}"

    for response in (
        auth_client.get(url),
        auth_client.patch(url, {"discount": 9}),
        auth_client.delete(url),
    ):
        assert response.status_code == 404
        assert response.json()["code"] == "resource_not_found"

    foreign.refresh_from_db()
    assert (foreign.discount, foreign.deleted_at) == (5, None)


def test_another_stores_coupon_is_not_listed(store, other_store, auth_client):
    CouponFactory(store=other_store)
    mine = CouponFactory(store=store)
    body = auth_client.get("/api/v1/coupons?with_trashed=true").json()
    assert [c["id"] for c in body["data"]] == [mine.id]


def test_x_store_selects_among_the_users_stores(user, store, auth_client):
    second = MembershipFactory(user=user).store
    auth_client.credentials(
        HTTP_AUTHORIZATION=auth_client._credentials["HTTP_AUTHORIZATION"], HTTP_X_STORE=second.slug
    )
    created = auth_client.post("/api/v1/coupons", VALID)
    assert created.json()["store_id"] == second.id
    listed = auth_client.get("/api/v1/coupons").json()
    assert [c["id"] for c in listed["data"]] == [created.json()["id"]]


def test_unknown_id_is_404(auth_client):
    assert auth_client.get("/api/v1/coupons/999999").status_code == 404
    assert auth_client.get("/api/v1/coupons/99999999999999999999999").status_code == 404
    assert auth_client.get("/api/v1/coupons/abc").status_code == 404


def test_delete_is_soft_204_then_404_everywhere(store, auth_client):
    coupon = CouponFactory(store=store)
    url = f"/api/v1/coupons/{coupon.id}"

    response = auth_client.delete(url)

    assert response.status_code == 204
    assert response.content == b""
    coupon.refresh_from_db()
    assert coupon.deleted_at is not None
    for again in (
        auth_client.get(url),
        auth_client.patch(url, {"discount": 2}),
        auth_client.delete(url),
    ):
        assert again.status_code == 404
        assert again.json()["code"] == "resource_not_found"
    listed = auth_client.get("/api/v1/coupons?only_trashed=true").json()["data"]
    assert listed[0]["id"] == coupon.id
    assert UTC_TIMESTAMP.match(listed[0]["deleted_at"])


@pytest.mark.parametrize("version", [1, 2])
def test_a_deleted_coupon_is_read_with_with_trashed_or_only_trashed(version, store, auth_client):
    deleted = CouponFactory(store=store, deleted_at=timezone.now())
    live = CouponFactory(store=store)
    url = f"/api/v{version}/coupons/{{}}"

    def read(coupon, query=""):
        response = auth_client.get(url.format(coupon.id) + query)
        body = response.json()
        return response.status_code, body.get("data", body) if version == 2 else body

    assert read(deleted)[0] == 404
    for query in ("?with_trashed=true", "?with_trashed=1", "?only_trashed=true"):
        status, coupon = read(deleted, query)
        assert status == 200, query
        assert coupon["id"] == deleted.id
        assert UTC_TIMESTAMP.match(coupon["deleted_at"])
    assert read(deleted, "?with_trashed=false")[0] == 404
    assert read(live, "?with_trashed=true") == (200, read(live)[1])
    # only_trashed wins over with_trashed, as on the list: a live coupon is not in it.
    assert read(live, "?only_trashed=true&with_trashed=true")[0] == 404
    # Writes stay on live coupons.
    assert (
        auth_client.patch(url.format(deleted.id) + "?with_trashed=true", {"limit": 2}).status_code
        == 404
    )


@pytest.mark.parametrize("query", ["with_trashed=yes", "only_trashed=", "with_trashed=TRUE"])
def test_a_malformed_trashed_parameter_on_a_read_is_a_422_naming_it(query, store, auth_client):
    coupon = CouponFactory(store=store, deleted_at=timezone.now())
    response = auth_client.get(f"/api/v1/coupons/{coupon.id}?{query}")
    assert response.status_code == 422
    assert response.json()["param"] == query.split("=")[0]


def test_another_stores_deleted_coupon_is_404_with_with_trashed(other_store, auth_client):
    coupon = CouponFactory(store=other_store, deleted_at=timezone.now())
    assert auth_client.get(f"/api/v1/coupons/{coupon.id}?with_trashed=true").status_code == 404


def test_code_is_reusable_after_delete(store, auth_client):
    first = auth_client.post("/api/v1/coupons", VALID).json()
    assert auth_client.post("/api/v1/coupons", {**VALID, "code": "welcome"}).status_code == 422

    assert auth_client.delete(f"/api/v1/coupons/{first['id']}").status_code == 204
    second = auth_client.post("/api/v1/coupons", {**VALID, "code": "welcome"})

    assert second.status_code == 201
    assert second.json()["id"] != first["id"]
    assert Coupon.objects.filter(store=store).count() == 2


def test_deleted_coupon_cannot_be_applied(store, auth_client):
    from django.db import transaction

    from core.api.errors import ValidationFailed
    from coupons.services import coupon_apply

    coupon = CouponFactory(store=store, code="BYE")
    auth_client.delete(f"/api/v1/coupons/{coupon.id}")
    with pytest.raises(ValidationFailed), transaction.atomic():
        coupon_apply(store=store, code="BYE", order_total_cents=1000)


def test_post_on_a_coupon_is_a_405_envelope(store, auth_client):
    coupon = CouponFactory(store=store)
    response = auth_client.post(f"/api/v1/coupons/{coupon.id}", VALID)
    assert response.status_code == 405
    assert response.json()["code"] == "method_not_allowed"
    assert response["Allow"] == "GET, PUT, PATCH, DELETE, HEAD"


@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_collection_methods_other_than_get_post_are_405(method, auth_client):
    response = getattr(auth_client, method)("/api/v1/coupons", {})
    assert response.status_code == 405
    assert response.json()["code"] == "method_not_allowed"
    assert response["Allow"] == "GET, POST, HEAD"


@pytest.mark.parametrize("body", ["[1, 2]", '"text"', "42", "null", "{not json"])
def test_body_that_is_not_a_json_object_is_400(body, store, auth_client):
    coupon = CouponFactory(store=store)
    for url, method in (("/api/v1/coupons", "post"), (f"/api/v1/coupons/{coupon.id}", "patch")):
        response = getattr(auth_client, method)(url, body, content_type="application/json")
        assert response.status_code == 400, (url, body)
        assert response.json()["code"] == "bad_request"


def test_form_encoded_body_is_415(auth_client):
    response = auth_client.post("/api/v1/coupons", "code=A", content_type="text/plain")
    assert response.status_code == 415


def test_without_credential_is_401(api_client, store):
    coupon = CouponFactory(store=store)
    assert api_client.get("/api/v1/coupons").status_code == 401
    response = api_client.get(f"/api/v1/coupons/{coupon.id}")
    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"


def test_key_without_the_coupon_ability_is_403(user, store, client_for):
    client = client_for(make_api_key(user, abilities=["invoice"]))
    response = client.get("/api/v1/coupons")
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"


def test_read_only_ability_reads_but_cannot_write(user, store, client_for):
    coupon = CouponFactory(store=store)
    client = client_for(make_api_key(user, abilities=["coupon:read"]))
    assert client.get("/api/v1/coupons").status_code == 200
    assert client.get(f"/api/v1/coupons/{coupon.id}").status_code == 200
    assert client.post("/api/v1/coupons", VALID).status_code == 403
    assert client.patch(f"/api/v1/coupons/{coupon.id}", {"discount": 2}).status_code == 403
    assert client.delete(f"/api/v1/coupons/{coupon.id}").status_code == 403
    coupon.refresh_from_db()
    assert (coupon.discount, coupon.deleted_at) == (5, None)


def test_staff_role_reads_but_cannot_write(client_for):
    membership = MembershipFactory(role=ROLE_STAFF)
    coupon = CouponFactory(store=membership.store)
    client = client_for(make_api_key(membership.user))
    assert client.get(f"/api/v1/coupons/{coupon.id}").status_code == 200
    assert client.delete(f"/api/v1/coupons/{coupon.id}").status_code == 403
    assert Coupon.objects.get(pk=coupon.pk).deleted_at is None


def test_inaccessible_x_store_is_403(auth_client):
    stranger = StoreFactory()
    auth_client.credentials(
        HTTP_AUTHORIZATION=auth_client._credentials["HTTP_AUTHORIZATION"],
        HTTP_X_STORE=stranger.slug,
    )
    response = auth_client.get("/api/v1/coupons")
    assert response.status_code == 403
    assert response.json()["param"] == "X-STORE"


def test_expiry_in_the_past_by_a_moment_is_refused(auth_client):
    moment_ago = (timezone.now() - timedelta(seconds=1)).isoformat()
    response = auth_client.post("/api/v1/coupons", {**VALID, "expires_at": moment_ago})
    assert response.status_code == 422
    assert response.json()["errors"]["expires_at"] == ["must be in the future"]


def test_fast_representation_matches_the_declared_drf_fields(store):
    from rest_framework import serializers

    from coupons.serializers import CouponSerializer

    full = CouponFactory(
        store=store,
        limit=3,
        minimum_amount=0,
        expires_at=datetime(2031, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
        deleted_at=timezone.now(),
    )
    for coupon in (full, CouponFactory(store=store)):
        drf_rendered = serializers.ModelSerializer.to_representation(CouponSerializer(), coupon)
        assert CouponSerializer(coupon).data == drf_rendered
