"""coupon_apply: the refusals, the discount, and the atomic usage limit under concurrency."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from core.api.errors import ValidationFailed
from coupons.models import Coupon
from coupons.services import coupon_apply
from tests.concurrency import run_at_once
from tests.factories import CouponFactory, StoreFactory


def apply(store, code, total_cents=10_000):
    with transaction.atomic():
        return coupon_apply(store=store, code=code, order_total_cents=total_cents)


def refusal(store, code, total_cents=10_000) -> str:
    with pytest.raises(ValidationFailed) as caught:
        apply(store, code, total_cents)
    assert caught.value.param == "coupon_code"
    return caught.value.errors["coupon_code"][0]


@pytest.mark.django_db
def test_applies_case_insensitively_and_counts_one_use():
    coupon = CouponFactory(code="Summer10", type=Coupon.TYPE_PERCENTAGE, discount=10)

    application = apply(coupon.store, "sUMMER10", 12_345)

    assert application.coupon.pk == coupon.pk
    assert application.discount_cents == 1_234  # 10% rounded down to the cent
    coupon.refresh_from_db()
    assert coupon.times_used == 1


@pytest.mark.django_db
def test_amount_discount_is_dollars_and_never_more_than_the_total():
    coupon = CouponFactory(code="TEN", type=Coupon.TYPE_AMOUNT, discount=10)
    assert apply(coupon.store, "TEN", 5_000).discount_cents == 1_000
    assert apply(coupon.store, "TEN", 700).discount_cents == 700


@pytest.mark.django_db
def test_unknown_code_and_other_stores_coupon_are_refused():
    coupon = CouponFactory(code="MINE")
    assert "not a coupon" in refusal(coupon.store, "NOPE")
    assert "not a coupon" in refusal(StoreFactory(), "MINE")


@pytest.mark.django_db
def test_deleted_coupon_is_refused():
    coupon = CouponFactory(code="GONE", deleted_at=timezone.now())
    assert "not a coupon" in refusal(coupon.store, "GONE")
    assert Coupon.objects.get(pk=coupon.pk).times_used == 0


@pytest.mark.django_db
def test_expired_coupon_is_refused_and_not_counted():
    coupon = CouponFactory(code="OLD", expires_at=timezone.now() - timedelta(seconds=1))
    assert refusal(coupon.store, "OLD") == "has expired"
    assert Coupon.objects.get(pk=coupon.pk).times_used == 0


@pytest.mark.django_db
def test_coupon_expiring_later_applies():
    coupon = CouponFactory(code="SOON", expires_at=timezone.now() + timedelta(minutes=1))
    assert apply(coupon.store, "SOON").coupon.pk == coupon.pk


@pytest.mark.django_db
def test_below_minimum_is_refused_and_the_minimum_itself_applies():
    coupon = CouponFactory(code="BIG", minimum_amount=50)
    assert "at least 50 dollars" in refusal(coupon.store, "BIG", 4_999)
    assert Coupon.objects.get(pk=coupon.pk).times_used == 0
    assert apply(coupon.store, "BIG", 5_000).discount_cents == 500


@pytest.mark.django_db
def test_used_up_coupon_is_refused():
    coupon = CouponFactory(code="ONCE", limit=1)
    apply(coupon.store, "ONCE")
    assert refusal(coupon.store, "ONCE") == "has reached its usage limit"
    assert Coupon.objects.get(pk=coupon.pk).times_used == 1


@pytest.mark.django_db
def test_refusal_leaves_the_callers_transaction_usable():
    coupon = CouponFactory(code="OLD", expires_at=timezone.now() - timedelta(days=1))
    with transaction.atomic():
        with pytest.raises(ValidationFailed):
            coupon_apply(store=coupon.store, code="old", order_total_cents=100)
        assert Coupon.objects.filter(pk=coupon.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_limit_5_with_50_concurrent_applications_succeeds_exactly_5_times():
    # given
    coupon = CouponFactory(code="RUSH", limit=5)

    def apply_rush():
        try:
            apply(coupon.store, "rush")
        except ValidationFailed as error:
            return error.errors["coupon_code"][0]
        return "applied"

    # when
    outcomes = run_at_once(apply_rush, 50, timeout=60)

    # then
    assert len(outcomes) == 50
    assert outcomes.count("applied") == 5
    assert outcomes.count("has reached its usage limit") == 45
    assert Coupon.objects.get(pk=coupon.pk).times_used == 5


@pytest.mark.django_db
def test_a_percentage_stops_at_its_maximum_discount_amount():
    coupon = CouponFactory(
        code="HALF", type=Coupon.TYPE_PERCENTAGE, discount="50", maximum_discount_amount="12.34"
    )
    assert apply(coupon.store, "HALF", 2_000).discount_cents == 1_000  # under the cap
    assert apply(coupon.store, "HALF", 10_000).discount_cents == 1_234  # capped


@pytest.mark.django_db
def test_amounts_with_cents_discount_and_require_them_exactly():
    coupon = CouponFactory(
        code="CENTS", type=Coupon.TYPE_AMOUNT, discount="2.50", minimum_amount="19.99"
    )
    assert refusal(coupon.store, "CENTS", 1_998) == "needs an order total of at least 19.99 dollars"
    assert apply(coupon.store, "CENTS", 1_999).discount_cents == 250


@pytest.mark.django_db
def test_a_whole_dollar_minimum_reads_as_before():
    coupon = CouponFactory(code="MIN", minimum_amount=20)
    assert refusal(coupon.store, "MIN", 1_999) == "needs an order total of at least 20 dollars"


@pytest.mark.django_db
def test_a_subscriptions_coupon_is_refused_on_a_one_time_order():
    coupon = CouponFactory(code="SUBS", applies_to="subscriptions", subscription_payments=3)
    assert refusal(coupon.store, "SUBS") == "applies to subscription payments only"
    assert Coupon.objects.get(pk=coupon.pk).times_used == 0
