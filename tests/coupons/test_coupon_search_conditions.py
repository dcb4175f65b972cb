"""The search body (Laravel Orion's, as the official SDK sends it) made into conditions on the
store's coupons: each operator, joins and nesting, SQL's NULL rules, the search term, the sort,
and a 422 naming the wrong part."""

from datetime import timedelta

import pytest
from django.utils import timezone

from core.api.errors import ValidationFailed
from coupons.models import Coupon
from coupons.search import MAX_FILTERS, MAX_IN_VALUES, coupon_search_parse
from tests.factories import CouponFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def coupons(store):
    """Four coupons of one store, and one of another store that no search of it may list."""
    soon = timezone.now() + timedelta(days=2)
    made = {
        "SUMMER25": CouponFactory(store=store, code="SUMMER25", type="PERCENTAGE", discount=25,
                                  limit=100, expires_at=soon),
        "summer10": CouponFactory(store=store, code="summer10", type="PERCENTAGE", discount=10),
        "TENOFF": CouponFactory(store=store, code="TENOFF", type="AMOUNT", discount=10,
                                minimum_amount=50),
        "WINTER_5": CouponFactory(store=store, code="WINTER_5", type="AMOUNT", discount=5,
                                  limit=3),
    }  # fmt: skip
    CouponFactory(code="SUMMER25")  # another store's
    return made


def where(field: str, operator: str, value) -> list[dict]:
    return [{"field": field, "operator": operator, "value": value}]


def codes(store, body) -> list[str]:
    search = coupon_search_parse(body)
    rows = Coupon.objects.filter(store=store).filter(search.condition).order_by(*search.order_by)
    return list(rows.values_list("code", flat=True))


def refused(body) -> dict:
    with pytest.raises(ValidationFailed) as raised:
        coupon_search_parse(body)
    return raised.value.errors


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (where("type", "=", "AMOUNT"), ["TENOFF", "WINTER_5"]),
        (where("discount", ">=", 10), ["SUMMER25", "summer10", "TENOFF"]),
        (where("discount", ">", "10"), ["SUMMER25"]),
        (where("discount", "<", 10.5), ["summer10", "TENOFF", "WINTER_5"]),
        (where("discount", "<=", 5), ["WINTER_5"]),
        (where("code", "like", "SUMMER%"), ["SUMMER25"]),
        (where("code", "like", "%OFF"), ["TENOFF"]),
        (where("code", "like", "%mm%"), ["summer10"]),
        (where("code", "like", "WINTER__"), ["WINTER_5"]),
        (where("code", "not like", "%0%"), ["SUMMER25", "TENOFF", "WINTER_5"]),
        (where("id", "in", []), None),
        (where("code", "in", ["TENOFF", "WINTER_5"]), ["TENOFF", "WINTER_5"]),
        (where("code", "not in", ["TENOFF"]), ["SUMMER25", "summer10", "WINTER_5"]),
        # SQL's NULL: `!=` and `not in` do not list a coupon whose limit is null
        (where("limit", "!=", 100), ["WINTER_5"]),
        (where("limit", "not in", [3]), ["SUMMER25"]),
        (where("limit", "=", None), ["summer10", "TENOFF"]),
        (where("limit", "!=", None), ["SUMMER25", "WINTER_5"]),
        (where("expires_at", ">", "2000-01-01T00:00:00Z"), ["SUMMER25"]),
        (where("store_wide", "=", True), ["SUMMER25", "summer10", "TENOFF", "WINTER_5"]),
    ],
)  # fmt: skip
def test_each_operator_selects_what_sql_would(store, coupons, filters, expected):
    if expected is None:
        assert "filters.0.value" in refused({"filters": filters})
    else:
        assert codes(store, {"filters": filters}) == expected


def test_filters_join_left_to_right_and_nested_groups_bind_together(store, coupons):
    # type = AMOUNT or (discount >= 25 and limit = 100)
    body = {
        "filters": [
            {"field": "type", "operator": "=", "value": "AMOUNT"},
            {
                "type": "or",
                "nested": [
                    {"field": "discount", "operator": ">=", "value": 25},
                    {"field": "limit", "operator": "=", "value": 100},
                ],
            },
        ]
    }

    assert codes(store, body) == ["SUMMER25", "TENOFF", "WINTER_5"]


def test_the_search_term_looks_in_the_code_with_or_without_case(store, coupons):
    assert codes(store, {"search": {"value": "summer"}}) == ["SUMMER25", "summer10"]
    assert codes(store, {"search": {"value": "summer", "case_sensitive": True}}) == ["summer10"]
    assert codes(store, {"search": {"value": ""}}) == list(coupons)


def test_sort_by_fields_then_by_id(store, coupons):
    body = {"sort": [{"field": "type", "direction": "desc"}, {"field": "discount"}]}

    assert codes(store, body) == ["summer10", "SUMMER25", "WINTER_5", "TENOFF"]


DEEPEST = "filters.0.nested.0.nested.0.nested"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"filters": where("times_used", "=", 1)}, "filters.0.field"),
        ({"filters": where("store__owner", "=", 1)}, "filters.0.field"),
        ({"filters": where("code", "~", "x")}, "filters.0.operator"),
        ({"filters": where("discount", "like", "1%")}, "filters.0.operator"),
        ({"filters": where("discount", "=", True)}, "filters.0.value"),
        ({"filters": where("discount", "=", "ten")}, "filters.0.value"),
        ({"filters": where("id", "=", "7")}, "filters.0.value"),
        ({"filters": where("expires_at", ">", "2030-01-01")}, "filters.0.value"),
        ({"filters": where("code", "=", "x" * 20_000)}, "filters.0.value"),
        ({"filters": where("code", "=", "a\x00")}, "filters.0.value"),
        ({"filters": where("limit", ">", None)}, "filters.0.value"),
        ({"filters": [{"field": "code", "operator": "="}]}, "filters.0.value"),
        ({"filters": where("id", "in", list(range(MAX_IN_VALUES + 1)))}, "filters.0.value"),
        ({"filters": [{**where("id", "=", 1)[0], "type": "xor"}]}, "filters.0.type"),
        ({"filters": [{"nested": [{"nested": [{"nested": [{"nested": []}]}]}]}]}, DEEPEST),
        ({"filters": "type = AMOUNT"}, "filters"),
        ({"filters": [[1]]}, "filters"),
        ({"filters": [{"nested": ["x" * 20_000]}]}, "filters.0.nested"),
        ({"sort": ["x" * 20_000]}, "sort"),
        ({"sort": [{"field": "times_used"}]}, "sort.0.field"),
        ({"sort": [{"field": "id", "direction": "up"}]}, "sort.0.direction"),
        ({"search": {"value": 5}}, "search.value"),
        ({"search": {"value": "x", "case_sensitive": "no"}}, "search.case_sensitive"),
    ],
)  # fmt: skip
def test_a_wrong_part_is_a_422_naming_it(body, param):
    assert param in refused(body)


def test_a_field_outside_the_coupon_is_named_in_the_message():
    errors = refused({"filters": where("password", "=", "x")})

    assert "'password' is not a field a search may name" in errors["filters.0.field"][0]


def test_bounds_keep_a_body_small(store):
    many = where("id", "=", 1) * (MAX_FILTERS + 1)

    assert f"filters.{MAX_FILTERS}" in refused({"filters": many})
