"""A search's `like` and `not like`: SQL LIKE with the semantics the search always had (`%` any
run, `_` one character, every other character literal, a backslash too; case-sensitive), and
the bounds of a search's work: a 422 naming the value past them."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.api.errors import ValidationFailed
from coupons.models import Coupon
from coupons.search import MAX_FILTERS, MAX_LIKE_LENGTH, MAX_LIKE_WILDCARDS, coupon_search_parse
from tests.factories import CouponFactory

pytestmark = pytest.mark.django_db

CODES = ["SUMMER25", "summer10", "A\\B", "A\\xyz", "a.c", "abc", "50%OFF", "ends\\", "Win_5"]


@pytest.fixture
def coupons(store):
    return [CouponFactory(store=store, code=code) for code in CODES]


def like(store, pattern: str, operator: str = "like") -> list[str]:
    body = {"filters": [{"field": "code", "operator": operator, "value": pattern}]}
    search = coupon_search_parse(body)
    rows = Coupon.objects.filter(store=store).filter(search.condition).order_by("id")
    return list(rows.values_list("code", flat=True))


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("SUMMER%", ["SUMMER25"]),  # case-sensitive
        ("%mm%", ["summer10"]),
        ("A\\%", ["A\\B", "A\\xyz"]),  # a backslash is itself, not LIKE's escape
        ("A\\B", ["A\\B"]),
        ("%\\", ["ends\\"]),  # a trailing backslash is no error
        ("a.c", ["a.c"]),  # a dot is itself (the regex's `.` was escaped too)
        ("a_c", ["a.c", "abc"]),
        ("50%", ["50%OFF"]),
        ("W_n\\_5", []),  # `\_` is a backslash then any character
        ("%(%", []),
        ("[a]%", []),
    ],
)
def test_like_keeps_the_search_semantics(store, coupons, pattern, expected):
    assert like(store, pattern) == expected


def test_not_like_is_the_rest(store, coupons):
    assert like(store, "%\\%", "not like") == ["SUMMER25", "summer10", "a.c", "abc", "50%OFF",
                                               "Win_5"]  # fmt: skip


def test_like_is_sql_like_not_a_regex(store, coupons):
    body = {"filters": [{"field": "code", "operator": "like", "value": "S%5"}]}
    search = coupon_search_parse(body)

    with CaptureQueriesContext(connection) as queries:
        list(Coupon.objects.filter(store=store).filter(search.condition))

    sql = queries.captured_queries[-1]["sql"]
    assert " LIKE " in sql
    assert "~" not in sql


def refused(value) -> dict:
    body = {"filters": [{"field": "code", "operator": "like", "value": value}]}
    with pytest.raises(ValidationFailed) as raised:
        coupon_search_parse(body)
    return raised.value.errors


def test_a_pattern_past_its_bounds_is_a_422_naming_the_value():
    long = refused("a" * (MAX_LIKE_LENGTH + 1))
    wild = refused("%a" * MAX_LIKE_WILDCARDS + "_")

    assert list(long) == ["filters.0.value"]
    assert f"at most {MAX_LIKE_LENGTH} characters" in long["filters.0.value"][0]
    assert list(wild) == ["filters.0.value"]
    assert f"at most {MAX_LIKE_WILDCARDS} wildcards" in wild["filters.0.value"][0]


def test_patterns_at_their_bounds_are_searched(store, coupons):
    body = {
        "filters": [
            {"type": "or", "field": "code", "operator": "like", "value": pattern}
            for pattern in [
                "%" * MAX_LIKE_WILDCARDS,
                "S" * MAX_LIKE_LENGTH,
                *(f"%{n}%" for n in range(MAX_FILTERS - 2)),
            ]
        ]
    }
    search = coupon_search_parse(body)

    assert Coupon.objects.filter(store=store).filter(search.condition).count() == len(CODES)
