"""Migration 0003_whole_coupon: coupons written before it take the defaults (one_time,
no cap, no payment count, no products) and keep their amounts exactly; the usage rules read
them as before."""

from decimal import Decimal

import pytest
from django.db import connection, transaction

from coupons.models import Coupon
from coupons.serializers import CouponSerializer
from coupons.services import coupon_apply
from tests.factories import StoreFactory
from tests.migrations import migrate

BEFORE = [("coupons", "0002_list_totals")]
AFTER = [("coupons", "0003_whole_coupon")]


@pytest.mark.django_db(transaction=True)
def test_existing_coupons_migrate_with_the_defaults():
    store = StoreFactory()
    old_apps = migrate(BEFORE)
    try:
        OldCoupon = old_apps.get_model("coupons", "Coupon")
        old = OldCoupon.objects.create(
            store_id=store.pk,
            code="OLD",
            type="AMOUNT",
            discount=7,
            store_wide=False,
            minimum_amount=20,
            limit=3,
        )
    finally:
        migrate(AFTER)

    coupon = Coupon.objects.get(pk=old.pk)
    assert (coupon.discount, coupon.minimum_amount) == (Decimal("7.00"), Decimal("20.00"))
    assert (coupon.applies_to, coupon.subscription_payments) == ("one_time", None)
    assert (coupon.maximum_discount_amount, coupon.products, coupon.product_variants) == (
        None,
        [],
        [],
    )
    shown = CouponSerializer(coupon).data
    assert (shown["discount"], shown["minimum_amount"], shown["limit"]) == ("7.00", "20.00", 3)
    with transaction.atomic():
        applied = coupon_apply(store=store, code="old", order_total_cents=2_000)
    assert applied.discount_cents == 700


@pytest.mark.django_db
def test_a_row_written_by_plain_sql_gets_the_defaults():
    # As bench/list_growth.py writes coupons: only the columns from before 0003_whole_coupon.
    store = StoreFactory()
    with connection.cursor() as cursor:
        cursor.execute(
            'INSERT INTO coupons_coupon (store_id, code, type, discount, "limit", times_used, '
            "store_wide, minimum_amount, expires_at, created_at, updated_at, deleted_at) "
            "VALUES (%s, 'RAW', 'AMOUNT', 3, NULL, 0, true, NULL, NULL, now(), now(), NULL) "
            "RETURNING id",
            [store.pk],
        )
        [coupon_id] = cursor.fetchone()

    coupon = Coupon.objects.get(pk=coupon_id)
    assert (coupon.applies_to, coupon.products, coupon.product_variants) == ("one_time", [], [])
