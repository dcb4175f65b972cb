"""The coupon admin: list columns, search, filters, and the soft-delete and restore actions
(through the services, so they are journalled and restore refuses a taken code)."""

import pytest
from django.utils import timezone

from coupons.models import Coupon
from events.models import Event
from tests.factories import CouponFactory, StoreFactory

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/coupons/coupon/"


def test_list_shows_code_type_discount_usage_expiry_and_deleted_state(admin_client):
    CouponFactory(code="LISTED", type="PERCENTAGE", discount=30, limit=4, times_used=3)
    CouponFactory(code="UNLIMITED", deleted_at=timezone.now())

    page = admin_client.get(CHANGELIST).content.decode()

    assert "LISTED" in page
    assert "Percentage" in page
    assert "3 / 4" in page
    assert "0 / unlimited" in page
    assert "icon-yes" in page  # the deleted one


def test_search_by_code_and_filters(admin_client):
    store = StoreFactory(slug="filter-store")
    CouponFactory(code="FINDME", store=store, type="AMOUNT")
    CouponFactory(code="OTHER", type="PERCENTAGE", discount=10)
    CouponFactory(code="TRASHED", deleted_at=timezone.now())

    def shown(query):
        page = admin_client.get(f"{CHANGELIST}?{query}").content.decode()
        return {c for c in ("FINDME", "OTHER", "TRASHED") if f">{c}<" in page}

    assert shown("q=findme") == {"FINDME"}
    assert shown("type__exact=PERCENTAGE") == {"OTHER"}
    assert shown(f"store__id__exact={store.id}") == {"FINDME"}
    assert shown("deleted=yes") == {"TRASHED"}
    assert shown("deleted=no") == {"FINDME", "OTHER"}


def test_soft_delete_action_goes_through_the_service(admin_client):
    coupon = CouponFactory()
    admin_client.post(
        CHANGELIST, {"action": "soft_delete", "_selected_action": [coupon.pk]}, follow=True
    )
    coupon.refresh_from_db()
    assert coupon.deleted_at is not None
    assert Event.objects.filter(type="coupon.deleted", subject_id=str(coupon.pk)).exists()


def test_restore_action_restores_and_refuses_a_taken_code(admin_client):
    free = CouponFactory(code="FREE", deleted_at=timezone.now())
    taken = CouponFactory(code="TAKEN", deleted_at=timezone.now())
    CouponFactory(store=taken.store, code="taken")

    response = admin_client.post(
        CHANGELIST,
        {"action": "restore", "_selected_action": [free.pk, taken.pk]},
        follow=True,
    )

    assert Coupon.objects.get(pk=free.pk).deleted_at is None
    assert Coupon.objects.get(pk=taken.pk).deleted_at is not None
    page = response.content.decode()
    assert "TAKEN: code is already used by a live coupon of this store" in page
    assert "1 coupon(s) restored." in page


def test_admin_offers_no_form_writes(admin_client):
    coupon = CouponFactory()
    assert admin_client.get(f"{CHANGELIST}add/").status_code == 403
    page = admin_client.get(f"{CHANGELIST}{coupon.pk}/change/")
    assert page.status_code == 200  # view only
    assert 'name="_save"' not in page.content.decode()


def test_list_and_record_show_the_sdk_fields(admin_client):
    coupon = CouponFactory(
        code="WHOLE",
        type="PERCENTAGE",
        discount="12.50",
        maximum_discount_amount="40.00",
        applies_to="subscriptions",
        subscription_payments=3,
        store_wide=False,
        products=[11, 12],
        product_variants=[120],
    )

    listed = admin_client.get(f"{CHANGELIST}?applies_to__exact=subscriptions").content.decode()
    record = admin_client.get(f"{CHANGELIST}{coupon.pk}/change/").content.decode()

    assert ">WHOLE<" in listed
    assert "40.00" in listed
    assert "Subscription payments" in listed
    assert "2 product(s), 1 variant(s)" in listed
    for shown in ("12.50", "40.00", ">11, 12<", ">120<", "Subscription payments"):
        assert shown in record, shown
