"""Every coupon validation rule of docs/design.md "Coupons (v1)": one failing case each (422
`validation_failed`, `param` and `errors` naming the field) and the boundary that passes."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from coupons.models import Coupon
from tests.factories import CouponFactory

pytestmark = pytest.mark.django_db

VALID = {"code": "WELCOME", "type": "AMOUNT", "discount": 5, "store_wide": True}


def future(**delta) -> str:
    return (timezone.now() + timedelta(**(delta or {"days": 1}))).isoformat()


def assert_422_on(response, field):
    assert response.status_code == 422, response.content
    body = response.json()
    assert body["type"] == "validation_error"
    assert body["code"] == "validation_failed"
    assert body["status"] == 422
    assert body["param"] == field
    assert field in body["errors"]
    messages = body["errors"][field]
    assert all(isinstance(m, str) and m for m in messages)
    # One message per broken rule: a rule is never said twice (a code over 64 characters).
    assert len(set(messages)) == len(messages), messages


# (field, failing value, passing boundary value, overrides for the rest of the body)
RULES = [
    ("code", "", "A", {}),
    ("code", "x" * 256, "x" * 255, {}),
    ("code", "HAS SPACE", "az-AZ_09", {}),
    ("code", "ÉTÉ", "ete", {}),
    ("code", 123, "123", {}),
    # Whole-string match, nothing trimmed: "$" alone would let a trailing newline through.
    ("code", "ABC\n", "ABC", {}),
    ("code", " ABC", "ABC", {}),
    ("code", None, "N", {}),
    ("type", "FREE_SHIPPING", "PERCENTAGE", {"discount": 10}),
    ("type", "percentage", "AMOUNT", {}),
    ("type", None, "AMOUNT", {}),
    ("discount", 0, 1, {}),
    ("discount", 101, 100, {"type": "PERCENTAGE"}),
    ("discount", 10_000_000_000, "9999999999.99", {"type": "AMOUNT"}),
    # A number or a numeric string (as the SDK sends), at most two decimals, never rounded.
    ("discount", "5.5.5", "5", {}),
    ("discount", "1e2", "5.50", {}),
    ("discount", " 5", 5.5, {}),
    ("discount", 5.555, 5.0, {}),
    ("discount", "5.555", "99.99", {"type": "PERCENTAGE"}),
    (
        "discount",
        100,
        99.99,
        {"type": "PERCENTAGE", "applies_to": "subscriptions", "subscription_payments": 2},
    ),
    ("discount", True, 1, {}),
    ("discount", None, 1, {}),
    ("store_wide", "true", True, {}),
    ("store_wide", 1, False, {"products": [1]}),
    ("store_wide", None, False, {"product_variants": [1]}),
    ("limit", 0, 1, {}),
    ("limit", False, None, {}),
    ("limit", "3", 3, {}),
    ("limit", 1.5, 2_147_483_647, {}),
    ("minimum_amount", -1, 0, {}),
    ("minimum_amount", "ten", "10", {}),
    ("minimum_amount", 10_000_000_000, 19.99, {}),
    ("minimum_amount", True, 10, {}),
    ("maximum_discount_amount", 0, "0.01", {"type": "PERCENTAGE", "discount": 10}),
    ("maximum_discount_amount", 5, None, {"type": "AMOUNT"}),
    ("maximum_discount_amount", "5,00", 5, {"type": "PERCENTAGE", "discount": 10}),
    ("applies_to", "monthly", "subscriptions", {"subscription_payments": 3}),
    ("applies_to", None, "one_time", {}),
    ("subscription_payments", 37, 36, {"applies_to": "subscriptions"}),
    ("subscription_payments", 0, 1, {"applies_to": "subscriptions"}),
    ("subscription_payments", None, 12, {"applies_to": "subscriptions"}),
    ("subscription_payments", "3", 3, {"applies_to": "subscriptions"}),
    ("products", [0], [1], {}),
    ("products", [1, 1], [1, 2], {}),
    ("products", "1", [], {}),
    ("products", [9_223_372_036_854_775_808], [9_223_372_036_854_775_807], {}),
    ("product_variants", [True], [1], {}),
    ("product_variants", list(range(1, 102)), list(range(1, 101)), {}),
    ("expires_at", "2020-01-01T00:00:00Z", future(), {}),
    # Computed at collection: a margin that outlasts a slow run of the suite.
    ("expires_at", "not a date", future(hours=6), {}),
    ("expires_at", "2030-13-01T00:00:00Z", "2030-12-31T23:59:59Z", {}),
    ("expires_at", "2030-01-01T00:00:00", "2030-01-01T00:00:00+02:00", {}),
    ("expires_at", "2030-01-01", None, {}),
    ("expires_at", 1_900_000_000, None, {}),
    # Year 10000 in UTC: PostgreSQL would store it, but no read of the row could load it.
    ("expires_at", "9999-12-31T23:59:59-01:00", "9999-12-31T00:00:00Z", {}),
    ("expires_at", "9999-12-31T23:59:59.000001Z", "9999-12-31T23:59:59Z", {}),
    ("expires_at", "9999-12-31T23:30:00-00:31", "9999-12-31T23:30:00-00:29", {}),
    # Year 0 in UTC: out of datetime's range the other way, and in the past anyway.
    ("expires_at", "0001-01-01T00:30:00+01:00", future(), {}),
]
# Without the computed dates: pytest-xdist needs the same test ids in every worker.
RULE_IDS = [f"{field}-{bad}" for field, bad, _, _ in RULES]


@pytest.mark.parametrize(("field", "bad", "good", "rest"), RULES, ids=RULE_IDS)
def test_create_rule(field, bad, good, rest, auth_client):
    body = {**VALID, **rest}

    refused = auth_client.post("/api/v1/coupons", {**body, field: bad})
    assert_422_on(refused, field)
    assert not Coupon.objects.exists()

    accepted = auth_client.post("/api/v1/coupons", {**body, field: good})
    assert accepted.status_code == 201, accepted.content


@pytest.mark.parametrize(("field", "bad", "good", "rest"), RULES, ids=RULE_IDS)
def test_update_rule(field, bad, good, rest, store, auth_client):
    coupon = CouponFactory(store=store, code="EXISTING", type="AMOUNT", discount=5)
    url = f"/api/v1/coupons/{coupon.id}"

    refused = auth_client.patch(url, {**rest, field: bad})
    assert_422_on(refused, field)
    coupon.refresh_from_db()
    assert (coupon.code, coupon.type, coupon.discount) == ("EXISTING", "AMOUNT", 5)

    accepted = auth_client.patch(url, {**rest, field: good})
    assert accepted.status_code == 200, accepted.content


@pytest.mark.parametrize("missing", ["code", "type", "discount", "store_wide"])
def test_create_requires_each_required_field(missing, auth_client):
    body = {k: v for k, v in VALID.items() if k != missing}
    response = auth_client.post("/api/v1/coupons", body)
    assert_422_on(response, missing)
    assert response.json()["errors"][missing] == ["is required"]


def test_optional_fields_may_be_omitted_and_are_null(auth_client):
    body = auth_client.post("/api/v1/coupons", VALID).json()
    assert body["limit"] is None
    assert body["minimum_amount"] is None
    assert body["expires_at"] is None


def test_every_bad_field_is_named_at_once(auth_client):
    response = auth_client.post(
        "/api/v1/coupons",
        {"code": "", "type": "X", "discount": "one", "store_wide": "no", "limit": 0},
    )
    assert response.status_code == 422
    body = response.json()
    assert set(body["errors"]) == {"code", "type", "discount", "store_wide", "limit"}
    assert body["param"] == "code"


def test_errors_are_listed_in_the_order_of_the_request_fields(auth_client):
    response = auth_client.post(
        "/api/v1/coupons",
        {"expires_at": "soon", "minimum_amount": -1, "limit": 0, "store_wide": 1, "code": 1},
    )
    assert response.status_code == 422
    body = response.json()
    # The body's field order of the spec's POST row: required first, then optional.
    expected = ["code", "type", "discount", "store_wide", "limit", "minimum_amount", "expires_at"]
    assert list(body["errors"]) == expected
    assert body["param"] == "code"


def test_empty_body_names_every_required_field(auth_client):
    response = auth_client.post("/api/v1/coupons", {})
    assert response.status_code == 422
    assert set(response.json()["errors"]) == {"code", "type", "discount", "store_wide"}


def test_code_must_be_unique_among_live_coupons_case_insensitively(store, auth_client):
    CouponFactory(store=store, code="Summer")
    response = auth_client.post("/api/v1/coupons", {**VALID, "code": "sUMMER"})
    assert_422_on(response, "code")


def test_same_code_in_another_store_is_fine(other_store, auth_client):
    CouponFactory(store=other_store, code="WELCOME")
    assert auth_client.post("/api/v1/coupons", VALID).status_code == 201


def test_patch_to_another_live_coupons_code_is_refused(store, auth_client):
    CouponFactory(store=store, code="TAKEN")
    coupon = CouponFactory(store=store, code="MINE")
    response = auth_client.patch(f"/api/v1/coupons/{coupon.id}", {"code": "taken"})
    assert_422_on(response, "code")


def test_patch_of_own_code_in_another_case_is_fine(store, auth_client):
    coupon = CouponFactory(store=store, code="MINE")
    response = auth_client.patch(f"/api/v1/coupons/{coupon.id}", {"code": "mine"})
    assert response.status_code == 200
    assert response.json()["code"] == "mine"


def test_patch_validates_the_merged_state(store, auth_client):
    # given an AMOUNT coupon of 150 dollars
    coupon = CouponFactory(store=store, type="AMOUNT", discount=150)

    # when only the type switches to PERCENTAGE
    response = auth_client.patch(f"/api/v1/coupons/{coupon.id}", {"type": "PERCENTAGE"})

    # then the merged discount (150 %) is refused
    assert_422_on(response, "discount")
    coupon.refresh_from_db()
    assert coupon.type == "AMOUNT"

    both = auth_client.patch(
        f"/api/v1/coupons/{coupon.id}", {"type": "PERCENTAGE", "discount": 100}
    )
    assert both.status_code == 200
    assert (both.json()["type"], both.json()["discount"]) == ("PERCENTAGE", "100.00")


def test_patch_of_other_fields_keeps_a_stored_past_expiry(store, auth_client):
    # The future-expiry rule applies to a given expires_at, not to the stored one.
    coupon = CouponFactory(store=store, expires_at=timezone.now() - timedelta(days=1))
    response = auth_client.patch(f"/api/v1/coupons/{coupon.id}", {"discount": 7})
    assert response.status_code == 200
    assert response.json()["discount"] == "7.00"


def test_patch_can_clear_nullable_fields(store, auth_client):
    coupon = CouponFactory(
        store=store, limit=3, minimum_amount=10, expires_at=timezone.now() + timedelta(days=1)
    )
    response = auth_client.patch(
        f"/api/v1/coupons/{coupon.id}",
        {"limit": None, "minimum_amount": None, "expires_at": None},
    )
    body = response.json()
    assert (body["limit"], body["minimum_amount"], body["expires_at"]) == (None, None, None)


def test_expiry_beyond_utc_year_9999_is_refused_with_the_rule(auth_client):
    response = auth_client.post(
        "/api/v1/coupons", {**VALID, "expires_at": "9999-12-31T23:59:59-01:00"}
    )
    assert_422_on(response, "expires_at")
    assert response.json()["errors"]["expires_at"] == [
        "must be at most 9999-12-31T23:59:59Z once converted to UTC"
    ]


def test_expiry_in_utc_year_9999_is_stored_and_read_back(store, auth_client):
    # given a coupon expiring on the last day that can be represented
    created = auth_client.post("/api/v1/coupons", {**VALID, "expires_at": "9999-12-31T00:00:00Z"})
    assert created.status_code == 201, created.content
    coupon_id = created.json()["id"]

    # then every read of the row works
    shown = auth_client.get(f"/api/v1/coupons/{coupon_id}")
    assert shown.status_code == 200, shown.content
    assert shown.json()["expires_at"] == "9999-12-31T00:00:00Z"
    listed = auth_client.get("/api/v1/coupons")
    assert listed.status_code == 200, listed.content
    assert [c["expires_at"] for c in listed.json()["data"]] == ["9999-12-31T00:00:00Z"]
    patched = auth_client.patch(f"/api/v1/coupons/{coupon_id}", {"discount": 6})
    assert patched.status_code == 200, patched.content
    assert auth_client.delete(f"/api/v1/coupons/{coupon_id}").status_code == 204


def test_expiry_with_an_offset_is_stored_in_utc(auth_client):
    response = auth_client.post(
        "/api/v1/coupons", {**VALID, "expires_at": "9999-12-31T22:00:00-01:30"}
    )
    assert response.status_code == 201, response.content
    assert response.json()["expires_at"] == "9999-12-31T23:30:00Z"
    stored = Coupon.objects.get().expires_at
    assert stored == datetime(9999, 12, 31, 23, 30, tzinfo=UTC)
    assert stored.utcoffset().total_seconds() == 0


def test_admin_lists_a_coupon_expiring_at_the_latest_second(store, auth_client, admin_client):
    created = auth_client.post("/api/v1/coupons", {**VALID, "expires_at": "9999-12-31T23:59:59Z"})
    assert created.status_code == 201, created.content

    page = admin_client.get("/admin/coupons/coupon/")
    assert page.status_code == 200
    assert "WELCOME" in page.content.decode()
