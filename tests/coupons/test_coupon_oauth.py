"""v1 coupons are for API keys: the CLI's real OAuth access token gets 403, even with X-STORE."""

import pytest

from tests.factories import CouponFactory

pytestmark = pytest.mark.django_db


def test_oauth_token_is_refused_on_every_coupon_operation(oauth_client, store):
    coupon = CouponFactory(store=store)
    url = f"/api/v1/coupons/{coupon.id}"
    body = {"code": "X", "type": "AMOUNT", "discount": 1, "store_wide": True}
    for response in (
        oauth_client.get("/api/v1/coupons", HTTP_X_STORE=store.slug),
        oauth_client.post("/api/v1/coupons", body, HTTP_X_STORE=store.slug),
        oauth_client.get(url, HTTP_X_STORE=store.slug),
        oauth_client.patch(url, {"discount": 2}, HTTP_X_STORE=store.slug),
        oauth_client.delete(url, HTTP_X_STORE=store.slug),
    ):
        assert response.status_code == 403
        assert response.json()["code"] == "forbidden"
    coupon.refresh_from_db()
    assert (coupon.discount, coupon.deleted_at) == (5, None)
