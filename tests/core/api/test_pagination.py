"""The shared Laravel paginator (docs/design.md "Pagination"), through GET /api/v2/invoices (the
store list, which it served before, is not paginated)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.api.pagination import _page_range_elements
from orders.services import order_place

pytestmark = pytest.mark.django_db

URL = "/api/v2/invoices"
BASE = "http://testserver/api/v2/invoices"


@pytest.fixture
def invoices(store):
    """25 orders of the store, newest first as the list shows them."""
    placed = [order_place(store=store, subtotal_cents=100 + n) for n in range(25)]
    return placed[::-1]


def labels(body):
    return [link["label"] for link in body["meta"]["links"]]


def test_first_page(auth_client, invoices):
    body = auth_client.get(URL, {"limit": 10}).json()
    assert [i["id"] for i in body["data"]] == [str(o.id) for o in invoices[:10]]
    assert body["links"] == {
        "first": f"{BASE}?limit=10&page=1",
        "last": f"{BASE}?limit=10&page=3",
        "prev": None,
        "next": f"{BASE}?limit=10&page=2",
    }
    meta = body["meta"]
    assert {k: v for k, v in meta.items() if k != "links"} == {
        "current_page": 1,
        "from": 1,
        "last_page": 3,
        "path": BASE,
        "per_page": 10,
        "to": 10,
        "total": 25,
    }
    assert meta["links"] == [
        {"url": None, "label": "&laquo; Previous", "active": False},
        {"url": f"{BASE}?limit=10&page=1", "label": "1", "active": True},
        {"url": f"{BASE}?limit=10&page=2", "label": "2", "active": False},
        {"url": f"{BASE}?limit=10&page=3", "label": "3", "active": False},
        {"url": f"{BASE}?limit=10&page=2", "label": "Next &raquo;", "active": False},
    ]


def test_middle_page(auth_client, invoices):
    body = auth_client.get(URL, {"limit": 10, "page": 2}).json()
    assert [i["id"] for i in body["data"]] == [str(o.id) for o in invoices[10:20]]
    assert body["links"]["prev"] == f"{BASE}?limit=10&page=1"
    assert body["links"]["next"] == f"{BASE}?limit=10&page=3"
    assert (body["meta"]["from"], body["meta"]["to"]) == (11, 20)
    assert [link["active"] for link in body["meta"]["links"]] == [False, False, True, False, False]


def test_last_page(auth_client, invoices):
    body = auth_client.get(URL, {"limit": 10, "page": 3}).json()
    assert len(body["data"]) == 5
    assert body["links"]["next"] is None
    assert body["meta"]["links"][-1] == {"url": None, "label": "Next &raquo;", "active": False}
    assert (body["meta"]["from"], body["meta"]["to"]) == (21, 25)


def test_past_the_end_page_is_empty_with_correct_meta(auth_client, invoices):
    response = auth_client.get(URL, {"limit": 10, "page": 7})
    assert response.status_code == 200
    body = response.json()
    assert body["data"] == []
    assert body["meta"]["current_page"] == 7
    assert body["meta"]["last_page"] == 3
    assert body["meta"]["total"] == 25
    assert body["meta"]["from"] is None
    assert body["meta"]["to"] is None
    assert body["links"]["next"] is None
    assert body["links"]["prev"] == f"{BASE}?limit=10&page=6"
    assert not any(link["active"] for link in body["meta"]["links"])


@pytest.mark.parametrize(
    "url",
    [URL, "/api/v1/coupons", "/api/v2/webhook-deliveries"],  # queryset and plain-SQL pages
)
def test_a_page_beyond_any_database_offset_is_an_empty_page_not_a_500(auth_client, invoices, url):
    # (page - 1) * limit past PostgreSQL's bigint OFFSET (found by the contract run)
    response = auth_client.get(url, {"limit": 100, "page": 648370188150792960})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["data"] == []
    assert body["meta"]["current_page"] == 648370188150792960
    assert body["meta"]["from"] is None


def test_default_page_size_is_15(auth_client, invoices):
    body = auth_client.get(URL).json()
    assert body["meta"]["per_page"] == 15
    assert len(body["data"]) == 15
    assert body["links"]["next"] == f"{BASE}?page=2"


def test_empty_list_has_one_page(auth_client):
    # given: a store without orders
    body = auth_client.get(URL).json()
    assert body["data"] == []
    assert body["meta"]["last_page"] == 1
    assert body["meta"]["total"] == 0
    assert body["meta"]["from"] is None
    assert labels(body) == ["&laquo; Previous", "1", "Next &raquo;"]


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"limit": -5}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"limit": "1.5"}, "limit"),
        ({"page": 0}, "page"),
        ({"page": "two"}, "page"),
        ({"page": -1}, "page"),
        ({"page": ""}, "page"),
        ({"limit": ""}, "limit"),
        # int() accepts these; the parameter is ASCII digits with an optional minus only.
        ({"limit": "1_0"}, "limit"),
        ({"limit": " 5"}, "limit"),
        ({"limit": "5 "}, "limit"),
        ({"limit": "5\n"}, "limit"),
        ({"limit": "+5"}, "limit"),
        ({"limit": "\uff15"}, "limit"),
        ({"limit": "\u0665"}, "limit"),
        ({"page": "1_0"}, "page"),
        ({"page": " 5"}, "page"),
        ({"page": "+5"}, "page"),
        ({"page": "\uff15"}, "page"),
        ({"page": "9" * 5000}, "page"),
    ],
)
def test_invalid_limit_or_page_is_422_naming_it(params, param, auth_client):
    response = auth_client.get(URL, params)
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "validation_failed"
    assert body["param"] == param
    assert list(body["errors"]) == [param]


@pytest.mark.parametrize("limit", ["1_0", " 5", "+5", "\uff15"])
def test_event_journal_limit_uses_the_same_strict_parser(limit, auth_client):
    # GET /api/v2/events is cursor-paginated but reads `limit` with the same parse_int_param.
    response = auth_client.get("/api/v2/events", {"limit": limit})
    assert response.status_code == 422
    assert response.json()["param"] == "limit"


def test_limit_bounds_are_accepted(auth_client, invoices):
    assert auth_client.get(URL, {"limit": 1}).status_code == 200
    assert auth_client.get(URL, {"limit": 100}).json()["meta"]["per_page"] == 100


def test_leading_zeros_are_still_an_integer(auth_client, invoices):
    assert auth_client.get(URL, {"limit": "010"}).json()["meta"]["per_page"] == 10
    assert auth_client.get(URL, {"limit": "-0"}).status_code == 422


def test_links_keep_other_query_parameters(auth_client, invoices):
    body = auth_client.get(URL, {"limit": 10, "page": 2, "foo": "bar"}).json()
    assert body["links"]["next"] == f"{BASE}?foo=bar&limit=10&page=3"


def test_links_keep_parameters_sorted_around_page_with_repeats_and_escapes(auth_client, invoices):
    # The links are built from one encoding of the other parameters, split around `page`:
    # the same text as encoding the whole sorted query for each link.
    query = "z=last&page=2&a=1&a=2&pa=%26%3D+x&pz=%C3%A9&limit=5"
    body = auth_client.get(f"{URL}?{query}").json()
    others = "a=1&a=2&limit=5&pa=%26%3D+x"
    assert body["links"]["prev"] == f"{BASE}?{others}&page=1&pz=%C3%A9&z=last"
    assert body["meta"]["links"][-1]["url"] == f"{BASE}?{others}&page=3&pz=%C3%A9&z=last"


def test_links_with_page_as_the_only_parameter(auth_client, invoices):
    body = auth_client.get(URL, {"page": 1}).json()
    assert body["links"]["next"] == f"{BASE}?page=2"
    assert body["links"]["last"] == f"{BASE}?page=2"


def test_many_pages_show_laravel_gaps(auth_client, invoices):
    # 25 pages of one invoice each
    first = auth_client.get(URL, {"limit": 1}).json()
    assert labels(first)[1:-1] == [*map(str, range(1, 11)), "...", "24", "25"]
    gap = first["meta"]["links"][11]
    assert gap == {"url": None, "label": "...", "active": False}

    middle = auth_client.get(URL, {"limit": 1, "page": 13}).json()
    assert labels(middle)[1:-1] == ["1", "2", "...", *map(str, range(10, 17)), "...", "24", "25"]

    end = auth_client.get(URL, {"limit": 1, "page": 25}).json()
    assert labels(end)[1:-1] == ["1", "2", "...", *map(str, range(16, 26))]


@pytest.mark.parametrize(
    ("current", "last", "expected"),
    [
        (1, 13, [list(range(1, 14))]),
        (1, 14, [list(range(1, 11)), "...", [13, 14]]),
        (7, 20, [list(range(1, 11)), "...", [19, 20]]),
        (8, 20, [[1, 2], "...", list(range(5, 12)), "...", [19, 20]]),
        (13, 20, [[1, 2], "...", list(range(10, 17)), "...", [19, 20]]),
        (14, 20, [[1, 2], "...", list(range(11, 21))]),
    ],
)
def test_page_window_matches_laravel_url_window(current, last, expected):
    assert _page_range_elements(current, last) == expected


def test_page_and_total_in_one_statement_count_alone_only_past_the_end(auth_client, invoices):
    def order_queries(params):
        with CaptureQueriesContext(connection) as queries:
            body = auth_client.get(URL, params).json()
        return body, [q["sql"] for q in queries if "orders_order" in q["sql"]]

    body, queries = order_queries({"limit": 10, "page": 3})
    assert (len(body["data"]), body["meta"]["total"]) == (5, 25)
    assert len(queries) == 1 and "SELECT COUNT(*) FROM" in queries[0]
    body, queries = order_queries({"limit": 10, "page": 4})
    assert (body["data"], body["meta"]["total"], body["meta"]["last_page"]) == ([], 25, 3)
    assert len(queries) == 2


def test_query_count_does_not_depend_on_the_page_size(auth_client, invoices):
    counts = {}
    for limit in (1, 25):
        for _ in range(2):  # warm caches alike (the identity: read, then confirmed)
            auth_client.get(URL, {"limit": limit})
        with CaptureQueriesContext(connection) as queries:
            body = auth_client.get(URL, {"limit": limit}).json()
        assert len(body["data"]) == limit
        counts[limit] = len(queries)
    assert counts[1] == counts[25], counts
