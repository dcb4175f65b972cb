"""Coupon writes under an optional Idempotency-Key (docs/design.md "Idempotency"): a replay answers
the stored outcome with `Idempotent-Replayed: true` and does nothing again; another body under
the same key is a 409; concurrent PATCHes can never persist an invalid coupon."""

import pytest
from rest_framework.test import APIClient

from coupons.models import Coupon
from events.models import Event
from tests.concurrency import run_at_once
from tests.factories import CouponFactory, MembershipFactory, make_api_key

pytestmark = pytest.mark.django_db

VALID = {"code": "WELCOME", "type": "AMOUNT", "discount": 5, "store_wide": True}


def events(type_):
    return Event.objects.filter(type=type_).count()


def test_create_replay_returns_the_stored_coupon_and_creates_no_second(store, auth_client):
    first = auth_client.post("/api/v1/coupons", VALID, HTTP_IDEMPOTENCY_KEY="create-1")
    assert first.status_code == 201
    assert "Idempotent-Replayed" not in first

    again = auth_client.post("/api/v1/coupons", VALID, HTTP_IDEMPOTENCY_KEY="create-1")

    assert again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert Coupon.objects.filter(store=store).count() == 1
    assert events("coupon.created") == 1


def test_create_replays_a_stored_422_too(auth_client):
    body = {**VALID, "discount": 0}
    first = auth_client.post("/api/v1/coupons", body, HTTP_IDEMPOTENCY_KEY="bad-1")
    again = auth_client.post("/api/v1/coupons", body, HTTP_IDEMPOTENCY_KEY="bad-1")
    assert (first.status_code, again.status_code) == (422, 422)
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["errors"] == first.json()["errors"]


def test_update_replay_returns_the_stored_answer_and_changes_nothing_again(store, auth_client):
    # given a PATCH under a key, then another change without a key
    coupon = CouponFactory(store=store, type="AMOUNT", discount=5)
    url = f"/api/v1/coupons/{coupon.id}"
    first = auth_client.patch(url, {"discount": 6}, HTTP_IDEMPOTENCY_KEY="update-1")
    assert first.status_code == 200
    assert auth_client.patch(url, {"discount": 7}).status_code == 200

    # when the keyed PATCH is sent again
    again = auth_client.patch(url, {"discount": 6}, HTTP_IDEMPOTENCY_KEY="update-1")

    # then it answers the stored outcome and does not run again
    assert again.status_code == 200
    assert again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    coupon.refresh_from_db()
    assert coupon.discount == 7
    assert events("coupon.updated") == 2


def test_delete_replay_answers_204_again_without_a_second_event(store, auth_client):
    coupon = CouponFactory(store=store)
    url = f"/api/v1/coupons/{coupon.id}"
    first = auth_client.delete(url, HTTP_IDEMPOTENCY_KEY="delete-1")
    again = auth_client.delete(url, HTTP_IDEMPOTENCY_KEY="delete-1")

    assert (first.status_code, again.status_code) == (204, 204)
    assert "Idempotent-Replayed" not in first
    assert again["Idempotent-Replayed"] == "true"
    assert again.content == b""
    assert events("coupon.deleted") == 1
    # without the key, the deleted coupon is gone
    assert auth_client.delete(url).status_code == 404


@pytest.mark.parametrize(
    ("method", "first_body", "second_body"),
    [
        ("post", VALID, {**VALID, "code": "OTHER"}),
        ("patch", {"discount": 6}, {"discount": 8}),
    ],
)
def test_same_key_with_another_body_is_409(method, first_body, second_body, store, auth_client):
    coupon = CouponFactory(store=store, code="EXISTING")
    url = "/api/v1/coupons" if method == "post" else f"/api/v1/coupons/{coupon.id}"
    send = getattr(auth_client, method)
    assert send(url, first_body, HTTP_IDEMPOTENCY_KEY="k").status_code in (200, 201)

    response = send(url, second_body, HTTP_IDEMPOTENCY_KEY="k")

    assert response.status_code == 409
    assert response.json()["code"] == "conflict"
    assert response.json()["param"] == "Idempotency-Key"
    assert Coupon.objects.filter(code="OTHER").count() == 0
    assert Coupon.objects.get(pk=coupon.pk).discount != 8


def test_same_key_on_another_coupon_is_409(store, auth_client):
    one, two = CouponFactory(store=store), CouponFactory(store=store)
    auth_client.delete(f"/api/v1/coupons/{one.id}", HTTP_IDEMPOTENCY_KEY="k")
    response = auth_client.delete(f"/api/v1/coupons/{two.id}", HTTP_IDEMPOTENCY_KEY="k")
    assert response.status_code == 409
    assert Coupon.objects.get(pk=two.pk).deleted_at is None


@pytest.mark.parametrize("key", ["", "x" * 256, "caf\u00e9"])
def test_malformed_key_is_422_and_nothing_is_created(key, auth_client):
    response = auth_client.post("/api/v1/coupons", VALID, HTTP_IDEMPOTENCY_KEY=key)
    assert response.status_code == 422
    assert response.json()["param"] == "Idempotency-Key"
    assert not Coupon.objects.exists()


def test_key_of_255_characters_is_accepted(auth_client):
    response = auth_client.post("/api/v1/coupons", VALID, HTTP_IDEMPOTENCY_KEY="k" * 255)
    assert response.status_code == 201


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_creates_with_one_key_make_one_coupon():
    # given
    membership = MembershipFactory()
    secret = make_api_key(membership.user)

    def post():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return client.post("/api/v1/coupons", VALID, format="json", HTTP_IDEMPOTENCY_KEY="race")

    # when
    responses = run_at_once(post, 20)

    # then
    assert Coupon.objects.filter(store=membership.store).count() == 1
    assert Event.objects.filter(type="coupon.created").count() == 1
    statuses = [r.status_code for r in responses]
    assert set(statuses) <= {201, 409}, statuses
    created = [r for r in responses if r.status_code == 201]
    assert len({r.json()["id"] for r in created}) == 1
    assert sum("Idempotent-Replayed" not in r for r in created) == 1
    for response in responses:
        if response.status_code == 409:
            assert response.json()["param"] == "Idempotency-Key"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("attempt", range(5))
def test_concurrent_patches_cannot_combine_into_an_invalid_coupon(attempt):
    # given an AMOUNT coupon of 50
    membership = MembershipFactory()
    secret = make_api_key(membership.user)
    coupon = CouponFactory(store=membership.store, type="AMOUNT", discount=50)
    url = f"/api/v1/coupons/{coupon.id}"
    bodies = [{"type": "PERCENTAGE"}, {"discount": 150}]  # each valid against that row

    def patch():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return client.patch(url, bodies.pop(), format="json")

    # when both PATCHes race
    responses = run_at_once(patch, 2)

    # then one wins and the other is refused on the merged discount
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200, 422], [r.content for r in responses]
    refused = next(r for r in responses if r.status_code == 422)
    assert refused.json()["param"] == "discount"
    coupon.refresh_from_db()
    assert (coupon.type, coupon.discount) in {("PERCENTAGE", 50), ("AMOUNT", 150)}
