"""POST/PATCH/DELETE /api/v{1,2}/coupons/batch: all or nothing in one transaction,
at most 100 resources, errors keyed `resources.<i>.<field>`, one event per coupon, and v2's
batch creation under Idempotency-Key."""

import pytest

from coupons.models import Coupon
from events.models import Event
from tests.concurrency import run_at_once
from tests.factories import CouponFactory

pytestmark = pytest.mark.django_db

ONE = {"code": "ONE", "type": "AMOUNT", "discount": 5, "store_wide": True}
TWO = {"code": "TWO", "type": "PERCENTAGE", "discount": "12.5", "store_wide": True}


def events(store) -> list[tuple[str, str]]:
    return list(Event.objects.filter(store=store).order_by("id").values_list("type", "subject_id"))


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_batch_create_answers_the_coupons_in_data_with_an_event_each(version, store, auth_client):
    response = auth_client.post(f"/api/{version}/coupons/batch", {"resources": [ONE, TWO]})

    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert [(c["code"], c["discount"]) for c in data] == [("ONE", "5.00"), ("TWO", "12.50")]
    assert events(store) == [("coupon.created", str(c["id"])) for c in data]


def test_batch_create_names_every_bad_field_of_every_resource_and_writes_nothing(
    store, auth_client
):
    response = auth_client.post(
        "/api/v1/coupons/batch",
        {"resources": [ONE, {**TWO, "discount": 101}, {**ONE, "code": "", "limit": 0}]},
    )

    assert response.status_code == 422
    body = response.json()
    assert body["param"] == "resources.1.discount"
    assert set(body["errors"]) == {
        "resources.1.discount",
        "resources.2.code",
        "resources.2.limit",
    }
    assert not Coupon.objects.exists()


def test_a_code_clash_inside_the_batch_rolls_back_the_coupons_before_it(store, auth_client):
    CouponFactory(store=store, code="TAKEN")

    response = auth_client.post(
        "/api/v1/coupons/batch",
        {"resources": [ONE, {**TWO, "code": "FRESH"}, {**TWO, "code": "fresh"}]},
    )
    taken = auth_client.post(
        "/api/v1/coupons/batch", {"resources": [ONE, {**TWO, "code": "taken"}]}
    )

    assert response.status_code == 422
    assert list(response.json()["errors"]) == ["resources.2.code"]
    assert list(taken.json()["errors"]) == ["resources.1.code"]
    assert list(Coupon.objects.values_list("code", flat=True)) == ["TAKEN"]
    assert events(store) == []


@pytest.mark.parametrize(
    ("method", "body", "param"),
    [
        ("post", {"resources": []}, "resources"),
        ("post", {"resources": [ONE] * 101}, "resources"),
        ("post", {"resources": {"0": ONE}}, "resources"),
        ("post", {}, "resources"),
        ("patch", {"resources": []}, "resources"),
        ("patch", {"resources": {"x": {}}}, "resources.x"),
        ("delete", {"resources": [1] * 2}, "resources"),
        ("delete", {"resources": ["1"]}, "resources"),
        ("post", {"resources": ["x" * 20_000]}, "resources"),
        ("delete", {"resources": list(range(1, 102))}, "resources"),
    ],
)
def test_batch_bodies_out_of_shape_are_422_naming_the_part(method, body, param, auth_client):
    response = getattr(auth_client, method)("/api/v1/coupons/batch", body, format="json")
    assert response.status_code == 422, response.content
    assert response.json()["param"] == param


def test_a_batch_of_100_is_accepted(store, auth_client):
    resources = [{**ONE, "code": f"C{n}"} for n in range(100)]
    response = auth_client.post("/api/v1/coupons/batch", {"resources": resources})
    assert response.status_code == 201
    assert Coupon.objects.filter(store=store).count() == 100


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_batch_update_changes_each_as_patch_would(version, store, auth_client):
    first = CouponFactory(store=store, discount=5)
    second = CouponFactory(store=store, type="PERCENTAGE", discount=10)

    response = auth_client.patch(
        f"/api/{version}/coupons/batch",
        {"resources": {str(second.id): {"limit": 2}, str(first.id): {"discount": "7.25"}}},
    )

    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert [(c["id"], c["discount"], c["limit"]) for c in data] == [
        (second.id, "10.00", 2),
        (first.id, "7.25", None),
    ]
    # Under the lock, in id order; journalled as each PATCH would be.
    assert sorted(events(store)) == sorted(
        [("coupon.updated", str(first.id)), ("coupon.updated", str(second.id))]
    )


def test_batch_update_checks_each_merged_coupon_and_changes_none_on_failure(
    store, other_store, auth_client
):
    amount = CouponFactory(store=store, type="AMOUNT", discount=150)
    fine = CouponFactory(store=store, discount=5)
    foreign = CouponFactory(store=other_store)

    merged = auth_client.patch(
        "/api/v1/coupons/batch",
        {"resources": {str(fine.id): {"discount": 6}, str(amount.id): {"type": "PERCENTAGE"}}},
    )
    missing = auth_client.patch(
        "/api/v1/coupons/batch",
        {"resources": {str(fine.id): {"discount": 6}, str(foreign.id): {"discount": 1}}},
    )

    assert merged.status_code == 422
    assert list(merged.json()["errors"]) == [f"resources.{amount.id}.discount"]
    assert missing.status_code == 422
    assert list(missing.json()["errors"]) == [f"resources.{foreign.id}"]
    fine.refresh_from_db()
    assert fine.discount == 5
    assert events(store) == []


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_batch_delete_soft_deletes_and_answers_the_deleted_coupons(version, store, auth_client):
    first, second, kept = (CouponFactory(store=store) for _ in range(3))

    response = auth_client.delete(
        f"/api/{version}/coupons/batch", {"resources": [second.id, first.id]}, format="json"
    )

    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert [c["id"] for c in data] == [second.id, first.id]
    assert all(c["deleted_at"] for c in data)
    assert list(Coupon.objects.live().values_list("id", flat=True)) == [kept.id]
    assert events(store) == [
        ("coupon.deleted", str(second.id)),
        ("coupon.deleted", str(first.id)),
    ]


def test_batch_delete_of_a_deleted_or_foreign_coupon_deletes_nothing(
    store, other_store, auth_client
):
    live = CouponFactory(store=store)
    gone = CouponFactory(store=store, code="GONE")
    auth_client.delete(f"/api/v1/coupons/{gone.id}")
    foreign = CouponFactory(store=other_store)

    response = auth_client.delete(
        "/api/v1/coupons/batch", {"resources": [live.id, gone.id, foreign.id]}, format="json"
    )

    assert response.status_code == 422
    assert set(response.json()["errors"]) == {"resources.1", "resources.2"}
    live.refresh_from_db()
    assert live.deleted_at is None


def test_v2_batch_create_replays_under_its_idempotency_key(store, auth_client):
    headers = {"HTTP_IDEMPOTENCY_KEY": "batch-create-1"}

    first = auth_client.post("/api/v2/coupons/batch", {"resources": [ONE, TWO]}, **headers)
    again = auth_client.post("/api/v2/coupons/batch", {"resources": [ONE, TWO]}, **headers)
    other = auth_client.post("/api/v2/coupons/batch", {"resources": [TWO]}, **headers)

    assert (first.status_code, again.status_code) == (201, 201)
    assert again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert other.status_code == 409
    assert Coupon.objects.filter(store=store).count() == 2


@pytest.mark.django_db(transaction=True)
def test_concurrent_batches_over_the_same_coupons_both_apply(store, api_key, client_for):
    # Both lock the same rows in id order: one waits for the other, neither deadlocks.
    coupons = [CouponFactory(store=store, discount=5) for _ in range(5)]
    bodies = iter(
        [
            {"resources": {str(c.id): {"limit": limit} for c in order}}
            for limit, order in ((1, coupons), (2, coupons[::-1]))
        ]
    )

    responses = run_at_once(
        lambda: client_for(api_key).patch("/api/v1/coupons/batch", next(bodies), format="json"),
        2,
    )

    assert sorted(r.status_code for r in responses) == [200, 200]
    assert len({c.limit for c in Coupon.objects.filter(store=store)}) == 1
