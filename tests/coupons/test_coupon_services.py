"""Coupon services: each change writes its journal event in the same transaction; failures
write nothing; restore refuses a code held by a live coupon."""

import pytest
from django.utils import timezone

from core.api.errors import NotFound, ValidationFailed
from coupons.models import Coupon
from coupons.services import coupon_create, coupon_delete, coupon_restore, coupon_update
from events.models import Event
from tests.concurrency import run_at_once
from tests.factories import CouponFactory, StoreFactory

VALID = {"code": "WELCOME", "type": "AMOUNT", "discount": 5, "store_wide": True}


def events_of(coupon):
    return list(
        Event.objects.filter(subject_type="coupon", subject_id=str(coupon.pk))
        .order_by("occurred_at", "id")
        .values_list("type", "store_id", "data", "version")
    )


@pytest.mark.django_db
def test_create_records_coupon_created():
    store = StoreFactory()
    coupon = coupon_create(store=store, **VALID)
    assert events_of(coupon) == [("coupon.created", store.id, {}, 1)]


@pytest.mark.django_db
def test_update_records_coupon_updated_and_a_no_op_records_nothing():
    coupon = CouponFactory(discount=5)
    updated_at = coupon.updated_at

    unchanged = coupon_update(coupon=coupon, changes={"discount": 5})
    assert events_of(coupon) == []
    assert unchanged.updated_at == updated_at

    changed = coupon_update(coupon=coupon, changes={"discount": 6})
    assert changed.discount == 6
    assert changed.updated_at > updated_at
    assert events_of(coupon) == [("coupon.updated", coupon.store_id, {}, 1)]


@pytest.mark.django_db
def test_delete_records_coupon_deleted_and_keeps_the_row():
    coupon = CouponFactory()
    deleted = coupon_delete(coupon=coupon)
    assert deleted.deleted_at is not None
    assert Coupon.objects.filter(pk=coupon.pk, deleted_at__isnull=False).exists()
    assert events_of(coupon) == [("coupon.deleted", coupon.store_id, {}, 1)]


@pytest.mark.django_db
def test_refused_changes_record_no_event_and_change_nothing():
    store = StoreFactory()
    CouponFactory(store=store, code="TAKEN")
    with pytest.raises(ValidationFailed):
        coupon_create(store=store, **{**VALID, "code": "taken"})
    coupon = CouponFactory(store=store, type="AMOUNT", discount=150)
    with pytest.raises(ValidationFailed) as caught:
        coupon_update(coupon=coupon, changes={"type": "PERCENTAGE"})
    assert caught.value.param == "discount"
    assert not Event.objects.exists()
    assert Coupon.objects.get(pk=coupon.pk).type == "AMOUNT"


@pytest.mark.django_db
def test_deleted_coupon_cannot_be_updated_or_deleted_again():
    coupon = CouponFactory()
    coupon_delete(coupon=coupon)
    with pytest.raises(NotFound):
        coupon_update(coupon=coupon, changes={"discount": 2})
    with pytest.raises(NotFound):
        coupon_delete(coupon=coupon)
    assert [e[0] for e in events_of(coupon)] == ["coupon.deleted"]


@pytest.mark.django_db
def test_restore_brings_a_deleted_coupon_back_and_records_coupon_updated():
    coupon = CouponFactory(code="BACK", deleted_at=timezone.now())
    restored = coupon_restore(coupon=coupon)
    assert restored.deleted_at is None
    assert events_of(coupon) == [("coupon.updated", coupon.store_id, {}, 1)]


@pytest.mark.django_db
def test_restore_is_refused_while_a_live_coupon_holds_the_code():
    old = CouponFactory(code="Spring", deleted_at=timezone.now())
    CouponFactory(store=old.store, code="SPRING")
    with pytest.raises(ValidationFailed) as caught:
        coupon_restore(coupon=old)
    assert caught.value.param == "code"
    assert Coupon.objects.get(pk=old.pk).deleted_at is not None
    assert events_of(old) == []


@pytest.mark.django_db
def test_restore_of_a_live_coupon_is_not_found():
    with pytest.raises(NotFound):
        coupon_restore(coupon=CouponFactory())


@pytest.mark.django_db
def test_live_code_uniqueness_is_enforced_by_the_database_too():
    from django.db import IntegrityError, transaction

    coupon = CouponFactory(code="DB")
    with pytest.raises(IntegrityError), transaction.atomic():
        CouponFactory(store=coupon.store, code="db")


@pytest.mark.django_db
def test_a_check_constraint_failure_is_not_reported_as_a_taken_code():
    from django.db import IntegrityError

    # Values the serializer would refuse (a discount below 1) that reach the service anyway:
    # the database's CHECK refuses the row, and that is a bug (500), not a 422 on `code`.
    with pytest.raises(IntegrityError, match="coupon_discount_in_range"):
        coupon_create(store=StoreFactory(), **{**VALID, "discount": 0})
    assert not Coupon.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_creates_of_one_code_make_one_coupon():
    store = StoreFactory()

    def create_race():
        try:
            coupon_create(store=store, **{**VALID, "code": "RACE"})
        except ValidationFailed as error:
            return error.param
        return "created"

    outcomes = run_at_once(create_race, 8, timeout=30)

    assert sorted(outcomes) == ["code"] * 7 + ["created"]
    assert Coupon.objects.filter(store=store).count() == 1
    assert Event.objects.filter(type="coupon.created").count() == 1
