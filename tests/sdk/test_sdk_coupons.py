"""The official SDK's coupon calls against the API under production settings: all ten
v2 calls, and on v1 the list, search, batch create/update/delete and delete; each answer read
as the SDK's own models (the 17 fields, amounts as strings). v1's single-coupon answers stay
bare objects (the spec's v1), which the SDK's v1 create/get/update/replace cannot read: raw
HTTP shows them here, and docs/api/coupons.md tells SDK users to use the v2 calls."""

import uuid

import httpx
import pytest
from django.utils import timezone
from sellapp_sdk import SellAppClient
from sellapp_sdk._errors import UnprocessableEntityError
from sellapp_sdk.blacklists.models.search_coupons_request_application_json_property_filters_item import (  # noqa: E501
    SearchCouponsRequestApplicationJsonPropertyFiltersItem as Filter,
)
from sellapp_sdk.blacklists.models.search_coupons_request_application_json_property_search import (
    SearchCouponsRequestApplicationJsonPropertySearch as Term,
)
from sellapp_sdk.blacklists.models.search_coupons_request_application_json_property_sort_item import (  # noqa: E501
    SearchCouponsRequestApplicationJsonPropertySortItem as Sort,
)
from sellapp_sdk.common.models.batch_create_coupons_request_application_json_property_resources_item import (  # noqa: E501
    BatchCreateCouponsRequestApplicationJsonPropertyResourcesItem as NewCoupon,
)
from sellapp_sdk.common.models.sdk_list_add_on_s_parent_products_response_value_200_application_json import (  # noqa: E501
    SdkListAddOnSParentProductsResponseValue200ApplicationJson as Changes,
)

from coupons.models import Coupon
from events.models import Event
from tests.factories import CouponFactory

pytestmark = pytest.mark.django_db(transaction=True)


def new(code: str, **fields) -> NewCoupon:
    return NewCoupon(
        code=code,
        type=fields.pop("type", "AMOUNT"),
        discount=fields.pop("discount", "5"),
        store_wide=fields.pop("store_wide", True),
        **fields,
    )


def test_v1_list_reads_every_field_of_old_and_new_coupons(sdk, sdk_owner):
    _, store, _ = sdk_owner
    # A coupon as it was before 0003_whole_coupon (the migration's defaults) and a whole one.
    old = CouponFactory(store=store, discount=5, minimum_amount=20)
    whole = CouponFactory(
        store=store,
        type="PERCENTAGE",
        discount="12.50",
        maximum_discount_amount="30.00",
        applies_to="subscriptions",
        subscription_payments=3,
        store_wide=False,
        products=[7, 8],
        product_variants=[70],
    )

    page = sdk.coupons.list(limit=1)
    [first] = page.data
    second = page.get_next_page()
    walked = list(sdk.coupons.list(limit=1).items())

    assert first.id == old.id
    assert (first.discount, first.minimum_amount, first.maximum_discount_amount) == (
        "5.00",
        "20.00",
        None,
    )
    assert first.applies_to.value == "one_time"
    assert (first.products, first.product_variants, first.subscription_payments) == ([], [], None)
    [shown] = second.data
    assert shown.id == whole.id
    assert (shown.discount, shown.maximum_discount_amount) == ("12.50", "30.00")
    assert (shown.applies_to.value, shown.subscription_payments) == ("subscriptions", 3)
    assert (shown.products, shown.product_variants) == ([7, 8], [70])
    assert page.meta["last_page"] == 2
    assert [coupon.id for coupon in walked] == [old.id, whole.id]


def test_v1_search_filters_sorts_and_pages(sdk, sdk_owner):
    _, store, _ = sdk_owner
    CouponFactory(store=store, code="SUMMER5", discount=5)
    ten = CouponFactory(store=store, code="SUMMER10", discount=10)
    twenty = CouponFactory(store=store, code="SUMMER20", discount=20)
    CouponFactory(store=store, code="WINTER50", discount=50)
    CouponFactory(store=store, code="SUMMER99", discount=99, deleted_at=timezone.now())

    page = sdk.coupons.search(
        filters=[Filter(field="discount", operator=">=", value="10")],
        search=Term(value="summer", case_sensitive=False),
        sort=[Sort(field="discount", direction="desc")],
        limit=1,
    )
    rest = page.get_next_page()

    assert [coupon.id for coupon in page.data] == [twenty.id]
    assert page.meta["total"] == 2
    assert [coupon.id for coupon in rest.data] == [ten.id]
    assert rest.get_next_page() is None
    with_deleted = sdk.coupons.search(search=Term(value="SUMMER99"), with_trashed=True)
    assert [coupon.code for coupon in with_deleted.data] == ["SUMMER99"]


def test_v1_search_naming_another_field_is_a_422_naming_it(sdk):
    with pytest.raises(UnprocessableEntityError) as raised:
        sdk.coupons.search(filters=[Filter(field="times_used", operator=">", value=1)])

    assert raised.value.param == "filters.0.field"
    assert "times_used" in raised.value.body["errors"]["filters.0.field"][0]


def test_v1_batch_create_update_delete_and_delete(sdk, sdk_owner):
    _, store, _ = sdk_owner

    created = sdk.coupons.batch_create(
        resources=[
            new("BATCH1", discount=5.5, minimum_amount="20"),
            new("BATCH2", type="PERCENTAGE", discount="15", store_wide=False, products=[3]),
        ]
    )
    one, two = created.data
    updated = sdk.coupons.batch_update(
        resources=Changes.from_dict(
            {str(one.id): {"discount": "6.25"}, str(two.id): {"limit": 3, "code": "BATCH2B"}}
        )
    )
    sdk.coupons.batch_delete(resources=[one.id])
    sdk.coupons.delete(two.id)

    assert [(c.code, c.discount, c.minimum_amount) for c in created.data] == [
        ("BATCH1", "5.50", "20.00"),
        ("BATCH2", "15.00", None),
    ]
    assert [(c.id, c.discount, c.limit, c.code) for c in updated.data] == [
        (one.id, "6.25", None, "BATCH1"),
        (two.id, "15.00", 3, "BATCH2B"),
    ]
    assert not Coupon.objects.live().filter(store=store).exists()
    types = list(Event.objects.filter(store=store).order_by("id").values_list("type", "subject_id"))
    assert types == [
        ("coupon.created", str(one.id)),
        ("coupon.created", str(two.id)),
        ("coupon.updated", str(one.id)),
        ("coupon.updated", str(two.id)),
        ("coupon.deleted", str(one.id)),
        ("coupon.deleted", str(two.id)),
    ]


def test_v1_batch_is_all_or_nothing_and_names_the_resource(sdk, sdk_owner):
    _, store, _ = sdk_owner

    with pytest.raises(UnprocessableEntityError) as raised:
        sdk.coupons.batch_create(
            resources=[
                new("FINE"),
                new("TWICE"),
                new("twice"),
                new("BAD", type="PERCENTAGE", discount="150"),
            ]
        )

    # Field rules of every resource at once; the live code clash needs the database.
    assert raised.value.body["errors"] == {
        "resources.3.discount": ["must be between 1 and 100 for a PERCENTAGE coupon"]
    }
    with pytest.raises(UnprocessableEntityError) as clash:
        sdk.coupons.batch_create(resources=[new("FINE"), new("TWICE"), new("twice")])
    assert list(clash.value.body["errors"]) == ["resources.2.code"]
    assert not Coupon.objects.filter(store=store).exists()
    assert not Event.objects.filter(store=store).exists()


def test_v1_single_answers_are_bare_objects(production_api, sdk_owner):
    _, _, key = sdk_owner
    headers = {"Authorization": f"Bearer {key}"}
    body = {"code": "BARE", "type": "AMOUNT", "discount": "4.99", "store_wide": True}

    with httpx.Client(base_url=production_api, headers=headers) as http:
        created = http.post("/v1/coupons", json=body)
        coupon_id = created.json()["id"]
        read = http.get(f"/v1/coupons/{coupon_id}")
        replaced = http.put(f"/v1/coupons/{coupon_id}", json={**body, "discount": 3})
        patched = http.patch(f"/v1/coupons/{coupon_id}", json={"limit": 2})
        deleted = http.delete(f"/v1/coupons/{coupon_id}")

    assert created.status_code == 201
    for response in (created, read, replaced, patched):
        assert "data" not in response.json()
        assert response.json()["id"] == coupon_id
        assert len(response.json()) == 17
    assert created.json()["discount"] == "4.99"
    assert replaced.json()["discount"] == "3.00"
    assert patched.json()["limit"] == 2
    assert deleted.status_code == 204


def test_all_ten_v2_calls(sdk, sdk_owner):
    _, store, _ = sdk_owner
    key = str(uuid.uuid4())

    created = sdk.coupons.v2_create_coupon(
        code="V2ONE", type="PERCENTAGE", discount=10, store_wide=False, products=[1, 2]
    )
    coupon_id = created.data.id
    read = sdk.coupons.v2_get_coupon(coupon_id)
    replaced = sdk.coupons.v2_replace_coupon(
        coupon_id, code="V2ONE", type="AMOUNT", discount="7.5", store_wide=True
    )
    updated = sdk.coupons.v2_update_coupon(coupon_id, limit=5, minimum_amount=10)
    listed = sdk.coupons.v2_list_coupons(limit=10)
    searched = sdk.coupons.v2_search_coupons(
        filters=[Filter(field="code", operator="like", value="V2%")]
    )
    batch = sdk.coupons.v2_batch_create_coupons(
        resources=[new("V2TWO"), new("V2THREE")], idempotency_key=key
    )
    again = sdk.coupons.v2_batch_create_coupons(
        resources=[new("V2TWO"), new("V2THREE")], idempotency_key=key
    )
    two, three = (coupon.id for coupon in batch.data)
    changed = sdk.coupons.v2_batch_update_coupons(
        resources=Changes.from_dict({str(two): {"discount": 8}})
    )
    sdk.coupons.v2_batch_delete_coupons(resources=[two, three])
    sdk.coupons.v2_delete_coupon(coupon_id)

    assert (created.data.code, created.data.discount, created.data.products) == (
        "V2ONE",
        "10.00",
        [1, 2],
    )
    assert read.data.id == coupon_id
    # PUT: the whole coupon; what it omits is back at its default.
    assert (replaced.data.type.value, replaced.data.discount, replaced.data.products) == (
        "AMOUNT",
        "7.50",
        [],
    )
    assert (updated.data.limit, updated.data.minimum_amount) == (5, "10.00")
    assert [coupon.id for coupon in listed.data] == [coupon_id]
    assert [coupon.id for coupon in searched.data] == [coupon_id]
    assert [coupon.code for coupon in batch.data] == ["V2TWO", "V2THREE"]
    # The retry with the same Idempotency-Key replays the answer: no second pair.
    assert [coupon.id for coupon in again.data] == [two, three]
    assert changed.data[0].discount == "8.00"
    assert not Coupon.objects.live().filter(store=store).exists()
    assert Coupon.objects.filter(store=store).count() == 3


def test_v2_with_an_oauth_token_and_x_store(production_api, tokens, store):
    cli = SellAppClient(
        access_token=tokens["access_token"],
        store=store.slug,
        base_url=production_api,
        max_retries=0,
    )

    created = cli.coupons.v2_create_coupon(code="OAUTH", type="AMOUNT", discount=3, store_wide=True)
    listed = cli.coupons.v2_list_coupons()
    deleted = httpx.delete(
        f"{production_api}/v2/coupons/{created.data.id}",
        headers={"Authorization": f"Bearer {tokens['access_token']}", "X-STORE": store.slug},
    )

    assert created.data.store_id == store.id
    assert [coupon.code for coupon in listed.data] == ["OAUTH"]
    assert deleted.status_code == 200
    assert deleted.json()["data"]["deleted_at"] is not None
