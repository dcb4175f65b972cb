"""GET /api/v1/coupons: trashed filters, the shared Laravel pagination, id order, and a
query count that does not grow with the page size."""

from datetime import UTC, datetime
from urllib.parse import urlsplit

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.api.pagination import DEFERRED_JOIN_FROM
from coupons.models import Coupon
from coupons.serializers import CouponSerializer
from tests.factories import CouponFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def live_and_deleted(store):
    live = [CouponFactory(store=store), CouponFactory(store=store)]
    deleted = [CouponFactory(store=store, deleted_at=timezone.now())]
    return {c.id for c in live}, {c.id for c in deleted}


def listed_ids(client, query=""):
    response = client.get(f"/api/v1/coupons{query}")
    assert response.status_code == 200, response.content
    return {c["id"] for c in response.json()["data"]}


TRUE, FALSE = ("true", "1"), ("false", "0")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", "live"),
        *[(f"?with_trashed={v}", "all") for v in TRUE],
        *[(f"?with_trashed={v}", "live") for v in FALSE],
        *[(f"?only_trashed={v}", "deleted") for v in TRUE],
        *[(f"?only_trashed={v}", "live") for v in FALSE],
        ("?with_trashed=true&only_trashed=true", "deleted"),
        ("?with_trashed=1&only_trashed=0", "all"),
        ("?with_trashed=false&only_trashed=true", "deleted"),
        ("?with_trashed=0&only_trashed=false", "live"),
    ],
)
def test_trashed_filters(query, expected, live_and_deleted, auth_client):
    live, deleted = live_and_deleted
    want = {"live": live, "deleted": deleted, "all": live | deleted}[expected]
    assert listed_ids(auth_client, query) == want


@pytest.mark.parametrize("param", ["with_trashed", "only_trashed"])
@pytest.mark.parametrize("value", ["yes", "TRUE", "2", "", "on", "truee"])
def test_malformed_boolean_is_422_naming_the_param(param, value, auth_client):
    response = auth_client.get(f"/api/v1/coupons?{param}={value}")
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "validation_failed"
    assert body["param"] == param
    assert list(body["errors"]) == [param]


def test_list_is_in_id_order_with_every_field(store, auth_client):
    coupons = [CouponFactory(store=store) for _ in range(3)]
    body = auth_client.get("/api/v1/coupons").json()
    assert [c["id"] for c in body["data"]] == [c.id for c in coupons]
    assert body["data"][0]["store_id"] == store.id
    assert len(body["data"][0]) == 17


def test_default_page_size_is_15(store, auth_client):
    CouponFactory.create_batch(16, store=store)
    body = auth_client.get("/api/v1/coupons").json()
    assert len(body["data"]) == 15
    assert body["meta"]["per_page"] == 15
    assert body["meta"]["last_page"] == 2


@pytest.mark.parametrize("limit", ["0", "101", "abc", "-1"])
def test_limit_outside_1_to_100_is_422(limit, auth_client):
    response = auth_client.get(f"/api/v1/coupons?limit={limit}")
    assert response.status_code == 422
    assert response.json()["param"] == "limit"


def test_limit_bounds_1_and_100_pass(store, auth_client):
    CouponFactory.create_batch(2, store=store)
    assert len(auth_client.get("/api/v1/coupons?limit=1").json()["data"]) == 1
    assert len(auth_client.get("/api/v1/coupons?limit=100").json()["data"]) == 2


def test_walking_links_next_over_40_coupons_visits_each_once(store, auth_client):
    # given 40 live coupons and one deleted one
    coupons = CouponFactory.create_batch(40, store=store)
    CouponFactory(store=store, deleted_at=timezone.now())

    # when following links.next from the first page of 15
    seen, pages = [], []
    response = auth_client.get("/api/v1/coupons?limit=15")
    while True:
        body = response.json()
        pages.append(body["meta"])
        seen.extend(c["id"] for c in body["data"])
        next_url = body["links"]["next"]
        if next_url is None:
            break
        parts = urlsplit(next_url)
        response = auth_client.get(f"{parts.path}?{parts.query}")
        assert response.status_code == 200

    # then every live coupon appears once, in id order, over 3 pages
    assert seen == [c.id for c in coupons]
    assert [p["current_page"] for p in pages] == [1, 2, 3]
    assert [(p["from"], p["to"]) for p in pages] == [(1, 15), (16, 30), (31, 40)]
    assert {p["total"] for p in pages} == {40}
    assert {p["last_page"] for p in pages} == {3}
    assert "limit=15" in body["links"]["first"]
    assert body["links"]["prev"].endswith("page=2")


def test_links_keep_the_trashed_filter(store, auth_client):
    CouponFactory.create_batch(3, store=store, deleted_at=timezone.now())
    body = auth_client.get("/api/v1/coupons?only_trashed=true&limit=2").json()
    assert "only_trashed=true" in body["links"]["next"]
    assert body["meta"]["total"] == 3


def test_page_past_the_end_is_empty_with_meta(store, auth_client):
    CouponFactory.create_batch(2, store=store)
    body = auth_client.get("/api/v1/coupons?page=5").json()
    assert body["data"] == []
    assert body["meta"]["total"] == 2
    assert (body["meta"]["from"], body["meta"]["to"]) == (None, None)


def test_query_count_does_not_depend_on_the_page_size(store, auth_client):
    CouponFactory.create_batch(120, store=store)
    counts = {}
    for limit in (15, 100):
        for _ in range(2):  # warm caches alike (the identity: read, then confirmed)
            auth_client.get(f"/api/v1/coupons?limit={limit}")
        with CaptureQueriesContext(connection) as queries:
            response = auth_client.get(f"/api/v1/coupons?limit={limit}&with_trashed=true")
        assert len(response.json()["data"]) == limit
        counts[limit] = len(queries)
    assert counts[15] == counts[100]
    # The API key, its membership in the first store, and the page with its total.
    assert counts[15] <= 3, counts


def list_queries(client, query):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/api/v1/coupons{query}")
    assert response.status_code == 200, response.content
    return response.json(), [q["sql"] for q in queries]


@pytest.fixture
def statements_as_sent(settings):
    """The statements' SQL as text in the captured queries, not EXECUTEs of prepared ones
    (core/database/connections.py; tests/core/database/test_prepared_statements.py covers those)."""
    settings.DATABASE_PREPARED_STATEMENTS = False


def test_total_comes_with_the_page_in_one_statement(store, auth_client, statements_as_sent):
    CouponFactory.create_batch(20, store=store)
    CouponFactory(store=store, deleted_at=timezone.now())
    auth_client.get("/api/v1/coupons")  # warm caches
    body, queries = list_queries(auth_client, "?limit=15&page=2")
    assert body["meta"]["total"] == 20 and len(body["data"]) == 5
    coupon_queries = [q for q in queries if "coupons_coupon" in q]
    assert len(coupon_queries) == 1, coupon_queries
    # The total is the store's maintained counter, not a count of its coupons.
    assert "coupons_coupontotal" in coupon_queries[0]
    assert "COUNT(" not in coupon_queries[0]


def test_page_past_the_end_counts_on_its_own(store, auth_client, statements_as_sent):
    CouponFactory.create_batch(3, store=store)
    body, queries = list_queries(auth_client, "?limit=2&page=3")
    assert body["data"] == [] and body["meta"]["total"] == 3 and body["meta"]["last_page"] == 2
    assert len([q for q in queries if "coupons_coupon" in q]) == 2


def test_empty_list_needs_no_count(store, auth_client, statements_as_sent):
    CouponFactory(store=store, deleted_at=timezone.now())
    body, queries = list_queries(auth_client, "")
    assert body["data"] == [] and body["meta"]["total"] == 0 and body["meta"]["last_page"] == 1
    assert len([q for q in queries if "coupons_coupon" in q]) == 1


@pytest.mark.parametrize(
    ("query", "listing"),
    [
        ("", lambda coupons: coupons.live()),
        ("with_trashed=true", lambda coupons: coupons),
        ("only_trashed=true", lambda coupons: coupons.deleted()),
    ],
)
def test_each_listing_pages_its_coupons_with_its_counted_total(
    query, listing, store, other_store, auth_client
):
    CouponFactory.create_batch(7, store=store)
    CouponFactory.create_batch(4, store=store, deleted_at=timezone.now(), expires_at=None)
    CouponFactory.create_batch(3, store=other_store)
    expected = list(listing(Coupon.objects.filter(store=store)).order_by("id"))
    for page, limit in [(1, 3), (2, 3), (1, 100), (len(expected), 1), (len(expected) + 1, 1)]:
        body = auth_client.get(f"/api/v1/coupons?{query}&page={page}&limit={limit}").json()
        offset = (page - 1) * limit
        assert body["data"] == [CouponSerializer(c).data for c in expected[offset : offset + limit]]
        assert body["meta"]["total"] == len(expected)


def test_listed_timestamps_render_as_a_single_coupon_s(store, auth_client):
    # The list's timestamps are rendered by PostgreSQL, a single coupon's by Python: the same
    # text for whole seconds, microseconds, the ends of the range and unset ones.
    moments = [
        datetime(2030, 1, 31, 23, 59, 59, tzinfo=UTC),
        datetime(2030, 1, 31, 23, 59, 59, 500, tzinfo=UTC),
        datetime(2030, 1, 31, 23, 59, 59, 120000, tzinfo=timezone.get_fixed_timezone(-90)),
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    ]
    coupons = [
        CouponFactory(
            store=store,
            created_at=moment,
            updated_at=moments[0],
            expires_at=moment,
            deleted_at=gone,
        )
        for moment in moments
        for gone in (None, moment)
    ]
    coupons.append(CouponFactory(store=store, expires_at=None))
    body = auth_client.get("/api/v1/coupons?with_trashed=true&limit=100").json()
    expected = [CouponSerializer(Coupon.objects.get(pk=c.pk)).data for c in coupons]
    assert body["data"] == expected
    assert body["data"][0]["created_at"] == "2030-01-31T23:59:59Z"
    assert body["data"][2]["created_at"] == "2030-01-31T23:59:59.000500Z"
    assert body["data"][4]["created_at"] == "2030-02-01T01:29:59.120000Z"


def test_listed_amounts_and_ids_render_as_a_single_coupon_s(store, auth_client):
    # The list's amounts are numeric(12,2) cast to text by PostgreSQL, a single coupon's are
    # Decimals formatted by Python: the same quoted strings, arrays and nulls.
    coupons = [
        CouponFactory(store=store, discount=5, minimum_amount=0),
        CouponFactory(store=store, discount="9999999999.99", minimum_amount="19.9"),
        CouponFactory(
            store=store,
            type="PERCENTAGE",
            discount="12.5",
            maximum_discount_amount="0.01",
            applies_to="subscriptions",
            subscription_payments=36,
            store_wide=False,
            products=[9_223_372_036_854_775_807, 1],
            product_variants=[3],
        ),
    ]
    body = auth_client.get("/api/v1/coupons").json()
    single = [auth_client.get(f"/api/v1/coupons/{c.pk}").json() for c in coupons]
    assert body["data"] == single
    assert [c["discount"] for c in body["data"]] == ["5.00", "9999999999.99", "12.50"]
    assert [c["minimum_amount"] for c in body["data"]] == ["0.00", "19.90", None]
    assert body["data"][2]["maximum_discount_amount"] == "0.01"
    assert body["data"][2]["products"] == [9_223_372_036_854_775_807, 1]


@pytest.fixture
def many_coupons(store):
    """More coupons than the paginator reads by OFFSET alone (DEFERRED_JOIN_FROM), some deleted."""
    now = timezone.now()
    Coupon.objects.bulk_create(
        Coupon(
            store=store,
            code=f"MANY{n:05d}",
            type="AMOUNT",
            discount=1 + n % 50,
            store_wide=True,
            created_at=now,
            updated_at=now,
            deleted_at=now if n % 10 == 0 else None,
        )
        for n in range(DEFERRED_JOIN_FROM + 150)
    )


@pytest.mark.parametrize(
    ("query", "listing"),
    [
        ("", lambda coupons: coupons.live()),
        ("with_trashed=true", lambda coupons: coupons),
    ],
)
def test_deep_pages_list_the_same_coupons_by_a_deferred_join(
    query, listing, many_coupons, store, auth_client, statements_as_sent
):
    expected = list(listing(Coupon.objects.filter(store=store)).order_by("id"))
    for page in (DEFERRED_JOIN_FROM // 100, DEFERRED_JOIN_FROM // 100 + 1):
        body, queries = list_queries(auth_client, f"?{query}&limit=100&page={page}")
        offset = (page - 1) * 100
        assert body["data"] == [CouponSerializer(c).data for c in expected[offset : offset + 100]]
        assert body["meta"]["total"] == len(expected)
        (page_query,) = [q for q in queries if "coupons_coupon" in q]
        # From DEFERRED_JOIN_FROM on, the page's ids first, then only those rows.
        assert ("IN (SELECT" in page_query) == (offset >= DEFERRED_JOIN_FROM)
