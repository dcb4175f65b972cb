"""CouponQuerySet's `of_store`, `live` and `deleted`: the one statement of each rule, and what
they combine to."""

import pytest
from django.utils import timezone

from coupons.filters import CouponListFilter
from coupons.models import Coupon
from tests.factories import CouponFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def coupons(store, other_store):
    deleted = timezone.now()
    return {
        "live": CouponFactory(store=store, code="LIVE"),
        "deleted": CouponFactory(store=store, code="GONE", deleted_at=deleted, expires_at=None),
        "other": CouponFactory(store=other_store, code="OTHER"),
        "other deleted": CouponFactory(
            store=other_store, code="OTHERGONE", deleted_at=deleted, expires_at=None
        ),
    }


def names(coupons, queryset):
    by_id = {coupon.id: name for name, coupon in coupons.items()}
    return sorted(by_id[coupon.id] for coupon in queryset)


def test_each_condition_and_their_combinations(coupons, store):
    everything = Coupon.objects.all()
    assert names(coupons, everything.live()) == ["live", "other"]
    assert names(coupons, everything.deleted()) == ["deleted", "other deleted"]
    assert names(coupons, everything.of_store(store)) == ["deleted", "live"]
    assert names(coupons, everything.of_store(store).live()) == ["live"]
    assert names(coupons, everything.live().of_store(store).deleted()) == []
    assert names(coupons, everything.of_store(store).deleted().all()) == ["deleted"]
    assert names(coupons, store.coupons.live()) == ["live"]


def test_each_filterset_has_filters_of_its_own():
    # The filters are copied per FilterSet (shallowly, for speed): a copy's parent is its own.
    first = CouponListFilter({}, queryset=Coupon.objects.all())
    second = CouponListFilter({}, queryset=Coupon.objects.all())
    for name in ("with_trashed", "only_trashed"):
        assert first.filters[name].parent is first and second.filters[name].parent is second
        assert first.filters[name] is not CouponListFilter.base_filters[name]
