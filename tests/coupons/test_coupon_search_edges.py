"""Search values at the edge of their column's type: each is a 422 naming the value (never a
500 from PostgreSQL or from a condition Django finds can match nothing), the edges derived from
the model's fields; and a property-based run over every field and operator finds no 5xx."""

import json

import pytest
from django.core.exceptions import ImproperlyConfigured
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coupons.models import Coupon
from coupons.search import COUPON_FIELDS, OPERATORS, search_field
from tests.factories import CouponFactory

pytestmark = pytest.mark.django_db

SEARCH = "/api/v1/coupons/search"


def search(client, field: str, operator: str, value):
    body = {"filters": [{"field": field, "operator": operator, "value": value}]}
    return client.post(SEARCH, body, format="json")


@pytest.mark.parametrize(
    ("field", "operator", "value"),
    [
        ("expires_at", ">", "2030-01-01T00:00:00+16:00"),  # beyond timestamptz's offsets
        ("expires_at", "<", "9999-12-31T23:00:00-05:00"),  # year 10000 in UTC
        ("created_at", ">", "0001-01-01T00:30:00+01:00"),  # year 0 in UTC
        ("discount", ">", "1e999999"),  # numeric overflows
        ("discount", ">", "1e-999999"),
        ("discount", "=", "10000000000"),  # numeric(12,2) holds 10 digits before the point
        ("minimum_amount", "<", 10.555),  # and 2 after
        ("limit", "=", 2147483648),  # integer
        ("limit", "<", -2147483649),
        ("subscription_payments", ">", 32768),  # smallint
        ("id", "=", 2**63),  # bigint
        ("store_id", "!=", -(2**63) - 1),
    ],
)
def test_a_value_past_its_columns_type_is_a_422_naming_it(auth_client, field, operator, value):
    response = search(auth_client, field, operator, value)

    assert response.status_code == 422, response.content
    assert response.json()["param"] == "filters.0.value"


def test_a_json_number_past_a_float_is_a_422(auth_client):
    body = '{"filters": [{"field": "discount", "operator": ">", "value": 1e999999}]}'

    response = auth_client.post(SEARCH, body, content_type="application/json")

    assert (response.status_code, response.json()["param"]) == (422, "filters.0.value")


@pytest.mark.parametrize(
    ("field", "operator", "value", "found"),
    [
        # within integer, but below what Django lets a positive field hold: Django compiles
        # no statement (= and <) or no condition (>); SQL's answers all the same
        ("limit", "=", -1, []),
        ("limit", "in", [-1, -2], []),
        ("limit", "<", -1, []),
        ("limit", ">", -1, ["limited"]),  # a null limit compares with nothing
        ("limit", ">=", -(2**31), ["limited"]),
        ("limit", "!=", -1, ["limited"]),
        ("expires_at", ">", "2030-01-01T00:00:00+15:59", ["limited"]),
        ("discount", ">", "-9999999999.99", ["limited", "unlimited"]),
        ("discount", "<", "10.500", ["limited", "unlimited"]),
    ],
)
def test_a_value_the_field_cannot_hold_compares_as_in_sql(
    store, auth_client, field, operator, value, found
):
    coupons = {
        "limited": CouponFactory(store=store, limit=5, expires_at="2031-01-01T00:00:00Z"),
        "unlimited": CouponFactory(store=store, limit=None, expires_at=None),
    }

    response = search(auth_client, field, operator, value)

    assert response.status_code == 200, response.content
    assert [row["id"] for row in response.json()["data"]] == [coupons[n].id for n in found]
    assert response.json()["meta"]["total"] == len(found)


def test_the_edges_come_from_the_models_field_types():
    # A field nobody declared for the search (a positive integer column) gets integer's range.
    times_used = search_field(Coupon, "times_used")

    assert times_used.read(2147483647) == 2147483647
    with pytest.raises(Exception, match="between -2147483648 and 2147483647"):
        times_used.read(2147483648)
    assert COUPON_FIELDS["store_id"].nullable is False
    assert COUPON_FIELDS["limit"].nullable is True
    with pytest.raises(ImproperlyConfigured):
        search_field(Coupon, "products")  # an array: no comparison reads it as one value


EDGE_INTEGERS = [0, -1, 2**15 - 1, 2**15, 2**31 - 1, 2**31, -(2**31) - 1, 2**63 - 1, 2**63]
EDGE_TEXTS = ["NaN", "-Infinity", "inf", "1e999999", "-1e999999", "1e-999999", "0E-1000",
              "9999999999.995", "", " ", "%", "\\", "_%\\", "10.5", "1_000"]  # fmt: skip


@st.composite
def timestamps(draw) -> str:
    year = draw(st.integers(1, 9999))
    sign = draw(st.sampled_from("+-"))
    hours, minutes = draw(st.integers(0, 23)), draw(st.integers(0, 59))
    zone = draw(st.sampled_from(["Z", f"{sign}{hours:02d}:{minutes:02d}", ""]))
    day = draw(st.sampled_from(["01-01T00:00:00", "12-31T23:59:59", "06-15T12:00:00.999999"]))
    return f"{year:04d}-{day}{zone}"


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(EDGE_INTEGERS),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.decimals(allow_nan=False, allow_infinity=False).map(str),
    st.sampled_from(EDGE_TEXTS),
    st.text(max_size=20),
    timestamps(),
)
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=4))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(field=st.sampled_from(sorted(COUPON_FIELDS)), operator=st.sampled_from(OPERATORS),
       value=VALUES)  # fmt: skip
def test_no_field_operator_or_value_answers_a_5xx(
    settings, store, auth_client, field, operator, value
):
    settings.API_RATE_LIMIT_PER_MINUTE = 1_000_000
    body = json.dumps(
        {"filters": [{"field": field, "operator": operator, "value": value}]}, allow_nan=False
    )

    response = auth_client.post(SEARCH, body, content_type="application/json")

    assert response.status_code in (200, 422), (field, operator, value, response.content)
    if response.status_code == 422:
        assert response.json()["param"].startswith("filters.0.")
