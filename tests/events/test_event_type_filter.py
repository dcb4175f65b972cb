"""The journal's `type` filter (docs/design.md "Event journal"): any string of
at most 120 characters, an unregistered type matching nothing, and a trailing `*` wildcard."""

import pytest

from tests.events.helpers import poll_all, record_committed

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def journal(store):
    """One event of each coupon type and of order.completed (as a pair, without an order)."""
    return {
        event_type: record_committed(store, type=event_type, subject=subject, data=data).id
        for event_type, subject, data in [
            ("coupon.created", ("coupon", "1"), None),
            ("order.completed", ("order", "1"), {"total_cents": 100, "currency": "EUR"}),
            ("coupon.updated", ("coupon", "1"), None),
            ("coupon.deleted", ("coupon", "1"), None),
        ]
    }


def _types(client, type_filter):
    events, _ = poll_all(client, params={"type": type_filter})
    return [event["type"] for event in events]


def test_an_unregistered_type_is_an_empty_page_not_an_error(auth_client, journal):
    response = auth_client.get("/api/v2/events", {"type": "order.refunded"})
    assert response.status_code == 200
    assert response.json()["data"] == []


def test_a_type_of_120_characters_is_accepted_and_121_is_a_422(auth_client):
    assert auth_client.get("/api/v2/events", {"type": "x" * 120}).status_code == 200
    response = auth_client.get("/api/v2/events", {"type": "x" * 121})
    assert response.status_code == 422
    assert response.json()["param"] == "type"


@pytest.mark.parametrize(
    ("type_filter", "expected"),
    [
        ("order.*", ["order.completed"]),
        ("coupon.*", ["coupon.created", "coupon.updated", "coupon.deleted"]),
        ("coupon.c*", ["coupon.created"]),
        ("coupon.created*", ["coupon.created"]),
        ("*", ["coupon.created", "order.completed", "coupon.updated", "coupon.deleted"]),
        ("invoice.*", []),
        # LIKE's own wildcards are literal characters here.
        ("coupon_*", []),
        ("%*", []),
    ],
)
def test_a_trailing_star_matches_every_type_it_starts(auth_client, journal, type_filter, expected):
    assert _types(auth_client, type_filter) == expected


@pytest.mark.parametrize("type_filter", ["*.completed", "coupon.**", "co*upon.created", "**"])
def test_a_star_anywhere_but_at_the_end_is_a_422(auth_client, type_filter):
    response = auth_client.get("/api/v2/events", {"type": type_filter})
    assert response.status_code == 422
    body = response.json()
    assert body["param"] == "type"
    assert body["errors"]["type"] == ["may hold one '*', as its last character only"]


def test_a_wildcard_cursor_is_bound_to_the_wildcard(auth_client, journal):
    cursor = auth_client.get("/api/v2/events", {"type": "coupon.*", "limit": 1}).json()["meta"][
        "next_cursor"
    ]
    same = auth_client.get("/api/v2/events", {"type": "coupon.*", "cursor": cursor})
    assert [event["type"] for event in same.json()["data"]] == ["coupon.updated", "coupon.deleted"]
    other = auth_client.get("/api/v2/events", {"type": "coupon.created", "cursor": cursor})
    assert other.status_code == 409


def test_a_nul_character_is_a_422_not_a_database_error(auth_client):
    response = auth_client.get("/api/v2/events", {"type": "order\x00.completed"})
    assert response.status_code == 422
    assert response.json()["param"] == "type"
