"""PUT /api/v{1,2}/coupons/{id} and the v2 coupon resource: `{"data": coupon}`
singles, OAuth tokens with X-STORE, API keys as on v1; and v1's single answers stay bare."""

import pytest

from coupons.models import Coupon
from events.models import Event
from tests.factories import CouponFactory

pytestmark = pytest.mark.django_db

WHOLE = {"code": "WHOLE", "type": "PERCENTAGE", "discount": 20, "store_wide": True}


def test_v2_singles_are_in_data_and_lists_paged(store, auth_client):
    created = auth_client.post("/api/v2/coupons", WHOLE)
    coupon_id = created.json()["data"]["id"]
    read = auth_client.get(f"/api/v2/coupons/{coupon_id}")
    patched = auth_client.patch(f"/api/v2/coupons/{coupon_id}", {"limit": 4})
    listed = auth_client.get("/api/v2/coupons")
    deleted = auth_client.delete(f"/api/v2/coupons/{coupon_id}")

    assert created.status_code == 201
    for response in (created, read, patched):
        assert set(response.json()) == {"data"}
        assert response.json()["data"]["id"] == coupon_id
        assert isinstance(response.json()["data"]["id"], int)
    assert patched.json()["data"]["limit"] == 4
    assert [c["id"] for c in listed.json()["data"]] == [coupon_id]
    assert listed.json()["meta"]["path"].endswith("/api/v2/coupons")
    # A v2 deletion answers the deleted coupon (v1's is a bare 204).
    assert deleted.status_code == 200
    assert deleted.json()["data"]["deleted_at"] is not None
    assert auth_client.get(f"/api/v2/coupons/{coupon_id}").status_code == 404


def test_v1_singles_stay_bare(store, auth_client):
    created = auth_client.post("/api/v1/coupons", WHOLE)
    coupon_id = created.json()["id"]
    replaced = auth_client.put(f"/api/v1/coupons/{coupon_id}", {**WHOLE, "discount": 30})
    assert "data" not in created.json() and "data" not in replaced.json()
    assert replaced.json()["discount"] == "30.00"
    assert auth_client.delete(f"/api/v1/coupons/{coupon_id}").status_code == 204


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_put_replaces_the_whole_coupon_omitted_fields_back_at_their_defaults(
    version, store, auth_client
):
    coupon = CouponFactory(
        store=store,
        type="PERCENTAGE",
        discount=10,
        limit=5,
        minimum_amount=20,
        maximum_discount_amount=8,
        applies_to="subscriptions",
        subscription_payments=2,
        store_wide=False,
        products=[1],
        product_variants=[2],
    )

    response = auth_client.put(
        f"/api/{version}/coupons/{coupon.id}", {**WHOLE, "code": "NEWCODE", "discount": "15.5"}
    )

    assert response.status_code == 200, response.content
    body = response.json()["data"] if version == "v2" else response.json()
    assert (body["code"], body["discount"], body["store_wide"]) == ("NEWCODE", "15.50", True)
    for name in ("limit", "minimum_amount", "maximum_discount_amount", "subscription_payments"):
        assert body[name] is None, name
    assert (body["applies_to"], body["products"], body["product_variants"]) == (
        "one_time",
        [],
        [],
    )
    assert list(Event.objects.filter(store=store).values_list("type", flat=True)) == [
        "coupon.updated"
    ]


def test_put_needs_the_required_fields_and_checks_the_whole(store, auth_client):
    coupon = CouponFactory(store=store, type="PERCENTAGE", discount=10)
    url = f"/api/v1/coupons/{coupon.id}"

    partial = auth_client.put(url, {"discount": 12})
    over_a_hundred = auth_client.put(url, {**WHOLE, "discount": 150})

    assert partial.status_code == 422
    assert set(partial.json()["errors"]) == {"code", "type", "store_wide"}
    assert (over_a_hundred.status_code, over_a_hundred.json()["param"]) == (422, "discount")
    coupon.refresh_from_db()
    assert coupon.discount == 10


def test_patch_to_one_time_clears_the_payment_count(store, auth_client):
    coupon = CouponFactory(store=store, applies_to="subscriptions", subscription_payments=3)
    response = auth_client.patch(f"/api/v1/coupons/{coupon.id}", {"applies_to": "one_time"})
    assert response.status_code == 200
    assert response.json()["subscription_payments"] is None


def test_a_coupon_from_before_issue_32_can_still_be_patched(store, auth_client):
    # store_wide false with no products (the migration's default), as a new one may be.
    coupon = CouponFactory(store=store, store_wide=False)
    changed = auth_client.patch(f"/api/v1/coupons/{coupon.id}", {"discount": 6})
    emptied = auth_client.patch(f"/api/v1/coupons/{coupon.id}", {"products": []})
    assert changed.status_code == 200
    assert emptied.status_code == 200


@pytest.mark.parametrize("path", ["", "/search", "/batch"])
def test_v1_refuses_oauth_tokens_on_the_new_endpoints_v2_takes_them(path, oauth_client, store):
    coupon = CouponFactory(store=store)
    body = {"resources": [coupon.id]} if path == "/batch" else {}
    method = {"": "get", "/search": "post", "/batch": "delete"}[path]

    v1 = getattr(oauth_client, method)(
        f"/api/v1/coupons{path}", body, format="json", HTTP_X_STORE=store.slug
    )
    v2 = getattr(oauth_client, method)(
        f"/api/v2/coupons{path}", body, format="json", HTTP_X_STORE=store.slug
    )
    without_store = getattr(oauth_client, method)(f"/api/v2/coupons{path}", body, format="json")

    assert (v1.status_code, v1.json()["code"]) == (403, "forbidden")
    assert v2.status_code == 200, v2.content
    assert without_store.status_code == 400
    assert without_store.json()["param"] == "X-STORE"


def test_v2_put_on_another_stores_coupon_is_404(other_store, auth_client):
    foreign = CouponFactory(store=other_store, discount=5)
    response = auth_client.put(f"/api/v2/coupons/{foreign.id}", WHOLE)
    assert response.status_code == 404
    assert Coupon.objects.get(pk=foreign.pk).code == foreign.code
