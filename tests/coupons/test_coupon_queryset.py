"""CouponQuerySet's `of_store`, `live` and `deleted`: their conditions are built into the query
only when it is needed, and the rows are those of `filter()` whatever follows them."""

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


def test_each_condition_and_their_combinations_list_what_filter_lists(coupons, store):
    everything = Coupon.objects.all()
    assert names(coupons, everything.live()) == ["live", "other"]
    assert names(coupons, everything.deleted()) == ["deleted", "other deleted"]
    assert names(coupons, everything.of_store(store)) == ["deleted", "live"]
    assert names(coupons, everything.of_store(store).live()) == ["live"]
    assert names(coupons, everything.live().of_store(store).deleted()) == []
    assert names(coupons, everything.of_store(store).deleted().all()) == ["deleted"]
    assert names(coupons, store.coupons.live()) == ["live"]  # Django defers the store's filter


def test_a_clone_leaves_its_source_as_it_was(coupons, store):
    # The conditions are handed to the clone unbuilt; the source keeps them too (a view's
    # class-level queryset is cloned by every request).
    shared = Coupon.objects.of_store(store).live()
    clones = [shared.all(), shared.order_by("-id"), shared.filter(code="LIVE")]
    assert [names(coupons, qs) for qs in [shared, *clones]] == [["live"]] * 4


def test_what_follows_keeps_the_conditions(coupons, store, other_store):
    mine = Coupon.objects.of_store(store)
    assert names(coupons, mine.live().filter(code__in=["LIVE", "OTHER"])) == ["live"]
    assert names(coupons, mine.exclude(code="LIVE")) == ["deleted"]
    assert names(coupons, mine.of_store(other_store)) == []
    assert names(coupons, mine.order_by("-id")[:5]) == ["deleted", "live"]
    assert list(mine.live().values_list("code", flat=True)) == ["LIVE"]
    assert mine.deleted().count() == 1
    assert mine.live().exists() and not mine.of_store(other_store).exists()
    assert names(coupons, Coupon.objects.filter(pk__in=mine.live().values("pk"))) == ["live"]
    assert names(coupons, mine.live() | Coupon.objects.of_store(other_store).deleted()) == [
        "live",
        "other deleted",
    ]


def test_writes_through_them_touch_only_their_rows(coupons, store):
    assert Coupon.objects.of_store(store).live().update(discount=7) == 1
    assert Coupon.objects.filter(discount=7).get().id == coupons["live"].id
    Coupon.objects.of_store(store).deleted().delete()
    assert names(coupons, Coupon.objects.all()) == ["live", "other", "other deleted"]


def test_a_sliced_queryset_refuses_them_as_it_refuses_filter(store):
    with pytest.raises(TypeError, match="slice has been taken"):
        Coupon.objects.all()[:2].live()


def test_each_filterset_has_filters_of_its_own():
    # The filters are copied per FilterSet (shallowly, for speed): a copy's parent is its own.
    first = CouponListFilter({}, queryset=Coupon.objects.all())
    second = CouponListFilter({}, queryset=Coupon.objects.all())
    for name in ("with_trashed", "only_trashed"):
        assert first.filters[name].parent is first and second.filters[name].parent is second
        assert first.filters[name] is not CouponListFilter.base_filters[name]
