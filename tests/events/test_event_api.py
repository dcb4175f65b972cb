import json
import re
from datetime import datetime

import pytest

from events.models import Event
from events.serializers import event_resource
from orders.services import order_complete, order_place
from tests.events.helpers import poll_all, record_committed
from tests.factories import make_api_key

pytestmark = pytest.mark.django_db(transaction=True)


def test_each_event_type_has_the_v2_event_shape(auth_client, store):
    # given one event of every registered type
    order = order_place(store=store, subtotal_cents=2599, currency="EUR")
    order_complete(order=order)
    for event_type in ("coupon.created", "coupon.updated", "coupon.deleted"):
        record_committed(store, type=event_type, subject=("coupon", "42"))
    # when
    response = auth_client.get("/api/v2/events")
    # then
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"data", "meta"}
    assert [e["type"] for e in body["data"]] == [
        "order.completed",
        "coupon.created",
        "coupon.updated",
        "coupon.deleted",
    ]
    completed = body["data"][0]
    assert re.fullmatch(r"evt_[0-9A-HJKMNP-TV-Z]{26}", completed["id"])
    assert completed["version"] == 1
    assert completed["store_id"] == str(store.pk)
    assert completed["subject"] == {"type": "order", "id": str(order.pk)}
    assert completed["data"] == {"total_cents": 2599, "currency": "EUR"}
    assert datetime.fromisoformat(completed["occurred_at"]).utcoffset().total_seconds() == 0
    assert completed["occurred_at"].endswith("Z")
    for coupon_event in body["data"][1:]:
        assert coupon_event["subject"] == {"type": "coupon", "id": "42"}
        assert coupon_event["data"] == {}
        assert coupon_event["version"] == 1
        assert isinstance(coupon_event["store_id"], str)
    assert body["meta"]["has_more"] is False
    assert body["meta"]["retention_days"] == 30
    assert isinstance(body["meta"]["next_cursor"], str) and body["meta"]["next_cursor"]


def test_journal_items_are_the_resource_webhooks_deliver(auth_client, store):
    # one rendering of the Event resource: the journal item is the webhook delivery body
    order = order_place(store=store, subtotal_cents=2599)
    order_complete(order=order)
    record_committed(store, type="coupon.deleted", subject=("coupon", "3"))
    items = auth_client.get("/api/v2/events").json()["data"]
    events = Event.objects.order_by("txid", "id")
    assert items == [json.loads(json.dumps(event_resource(event))) for event in events]


def test_pages_follow_the_cursor_oldest_first_with_has_more(auth_client, store):
    # given
    recorded = [record_committed(store, subject=("coupon", str(n))).id for n in range(5)]
    # when
    first = auth_client.get("/api/v2/events", {"limit": 2}).json()
    second = auth_client.get(
        "/api/v2/events", {"limit": 2, "cursor": first["meta"]["next_cursor"]}
    ).json()
    third = auth_client.get(
        "/api/v2/events", {"limit": 2, "cursor": second["meta"]["next_cursor"]}
    ).json()
    # then
    assert [e["id"] for e in first["data"]] == recorded[:2]
    assert first["meta"]["has_more"] is True
    assert [e["id"] for e in second["data"]] == recorded[2:4]
    assert second["meta"]["has_more"] is True
    assert [e["id"] for e in third["data"]] == recorded[4:]
    assert third["meta"]["has_more"] is False


def test_default_limit_is_50(auth_client, store):
    for n in range(51):
        record_committed(store, subject=("coupon", str(n)))
    body = auth_client.get("/api/v2/events").json()
    assert len(body["data"]) == 50
    assert body["meta"]["has_more"] is True


def test_an_idle_store_can_be_polled_forever_with_one_cursor(auth_client, store):
    # given an empty journal
    empty = auth_client.get("/api/v2/events").json()
    assert empty["data"] == []
    cursor = empty["meta"]["next_cursor"]
    # when polled again with that cursor, still empty, the next cursor is just as usable
    again = auth_client.get("/api/v2/events", {"cursor": cursor}).json()
    assert again["data"] == [] and again["meta"]["has_more"] is False
    assert again["meta"]["next_cursor"]
    event = record_committed(store)
    # then the new event arrives once, and the empty page after it has a cursor too
    arrived = auth_client.get("/api/v2/events", {"cursor": again["meta"]["next_cursor"]}).json()
    assert [e["id"] for e in arrived["data"]] == [event.id]
    after = auth_client.get("/api/v2/events", {"cursor": arrived["meta"]["next_cursor"]}).json()
    assert after["data"] == []
    assert after["meta"]["next_cursor"]


def test_events_of_other_stores_are_never_listed(auth_client, store, other_store, other_client):
    mine = record_committed(store)
    theirs = record_committed(other_store)
    assert [e["id"] for e in poll_all(auth_client)[0]] == [mine.id]
    assert [e["id"] for e in poll_all(other_client)[0]] == [theirs.id]


@pytest.mark.parametrize("limit", ["0", "101", "abc", "-1", "1.5"])
def test_invalid_limit_is_422(auth_client, limit):
    response = auth_client.get("/api/v2/events", {"limit": limit})
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "validation_failed"
    assert body["param"] == "limit"


@pytest.mark.parametrize("limit", ["1", "100"])
def test_limit_bounds_are_accepted(auth_client, limit):
    assert auth_client.get("/api/v2/events", {"limit": limit}).status_code == 200


def test_filters_by_type_subject_type_and_subject_id(auth_client, store):
    # given
    order = order_place(store=store, subtotal_cents=1000)
    order_complete(order=order)
    created = record_committed(store, type="coupon.created", subject=("coupon", "7"))
    updated = record_committed(store, type="coupon.updated", subject=("coupon", "7"))
    other_coupon = record_committed(store, type="coupon.created", subject=("coupon", "8"))
    # when / then
    by_type = poll_all(auth_client, params={"type": "coupon.created"})[0]
    assert [e["id"] for e in by_type] == [created.id, other_coupon.id]
    by_subject_type = poll_all(auth_client, params={"subject_type": "order"})[0]
    assert [e["type"] for e in by_subject_type] == ["order.completed"]
    by_subject = poll_all(auth_client, params={"subject_type": "coupon", "subject_id": "7"})[0]
    assert [e["id"] for e in by_subject] == [created.id, updated.id]
    combined = poll_all(auth_client, params={"type": "coupon.updated", "subject_id": "7"})[0]
    assert [e["id"] for e in combined] == [updated.id]


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"type": "x" * 121}, "type"),
        ({"type": "order.*.x"}, "type"),
        ({"subject_type": "invoice"}, "subject_type"),
        ({"subject_id": "1" * 101}, "subject_id"),
        ({"subject_id": "a\x00b"}, "subject_id"),
        ({"subject_id": "\x99"}, "subject_id"),
        ({"subject_id": "a b"}, "subject_id"),
        ({"subject_id": "12\n"}, "subject_id"),
        ({"type": ""}, "type"),
        ({"subject_type": ""}, "subject_type"),
        ({"subject_id": ""}, "subject_id"),
    ],
)
def test_invalid_filters_are_422_naming_the_filter(auth_client, params, param):
    response = auth_client.get("/api/v2/events", params)
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "validation_failed"
    assert body["param"] == param
    assert param in body["errors"]


def test_filters_at_their_maximum_length_are_accepted(auth_client):
    response = auth_client.get("/api/v2/events", {"subject_id": "1" * 100})
    assert response.status_code == 200


@pytest.mark.parametrize("mangle", ["flip", "garbage", "truncate", "huge"])
def test_tampered_or_malformed_cursor_is_400(auth_client, store, mangle):
    record_committed(store)
    cursor = auth_client.get("/api/v2/events").json()["meta"]["next_cursor"]
    bad = {
        "flip": cursor[:-1] + ("A" if cursor[-1] != "A" else "B"),
        "garbage": "not-a-cursor",
        "truncate": cursor[: len(cursor) // 2],
        "huge": "x" * 5000,
    }[mangle]
    response = auth_client.get("/api/v2/events", {"cursor": bad})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "bad_request"
    assert body["type"] == "invalid_request_error"
    assert body["param"] == "cursor"


def test_cursor_reused_with_other_filters_is_409(auth_client, store):
    record_committed(store)
    cursor = auth_client.get("/api/v2/events", {"type": "coupon.created"}).json()["meta"][
        "next_cursor"
    ]
    for params in ({}, {"type": "coupon.updated"}, {"type": "coupon.created", "subject_id": "1"}):
        response = auth_client.get("/api/v2/events", {**params, "cursor": cursor})
        assert response.status_code == 409, params
        assert response.json()["code"] == "conflict"
        assert response.json()["param"] == "cursor"
    # the exact same filter set is fine
    same = auth_client.get("/api/v2/events", {"type": "coupon.created", "cursor": cursor})
    assert same.status_code == 200


def test_cursor_of_another_store_is_409(auth_client, store, other_store, other_client):
    record_committed(other_store)
    their_cursor = other_client.get("/api/v2/events").json()["meta"]["next_cursor"]
    response = auth_client.get("/api/v2/events", {"cursor": their_cursor})
    assert response.status_code == 409
    assert response.json()["code"] == "conflict"
    assert response.json()["param"] == "cursor"


def test_event_ability_is_required(user, store, client_for):
    client = client_for(make_api_key(user, abilities=["invoice"]))
    response = client.get("/api/v2/events")
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"


def test_read_only_event_ability_is_enough(user, store, client_for):
    client = client_for(make_api_key(user, abilities=["event:read"]))
    assert client.get("/api/v2/events").status_code == 200


def test_x_store_selects_the_journal(user, store, other_store, client_for):
    # the user belongs to both stores; X-STORE picks one
    from tests.factories import MembershipFactory

    MembershipFactory(user=user, store=other_store)
    record_committed(other_store, subject=("coupon", "9"))
    client = client_for(make_api_key(user))
    body = client.get("/api/v2/events", HTTP_X_STORE=other_store.slug).json()
    assert [e["store_id"] for e in body["data"]] == [str(other_store.pk)]
    assert Event.objects.count() == 1


def test_a_cursor_positioned_on_the_last_served_event_is_still_accepted(auth_client, store):
    """Cursors issued before scanned-through positions carry the last served event."""
    from events.cursors import JournalCursor, JournalPosition, cursor_encode

    seen = record_committed(store, subject=("coupon", "1"))
    new = record_committed(store, subject=("coupon", "2"))
    legacy = cursor_encode(
        store_id=store.pk,
        filters={},
        cursor=JournalCursor(JournalPosition(txid=seen.txid, event_id=seen.id), prune_mark=None),
    )
    response = auth_client.get("/api/v2/events", {"cursor": legacy})
    assert response.status_code == 200
    assert [e["id"] for e in response.json()["data"]] == [new.id]


def test_an_empty_cursor_starts_at_the_oldest_event(auth_client, store):
    first = record_committed(store)
    response = auth_client.get("/api/v2/events", {"cursor": ""})
    assert response.status_code == 200
    assert [e["id"] for e in response.json()["data"]] == [first.id]


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete", "options"])
@pytest.mark.parametrize("journal", ["/api/v2/events", "/api/v2/orders/{order}/events"])
def test_other_methods_are_405_with_an_honest_allow(auth_client, store, method, journal):
    order = order_place(store=store, subtotal_cents=100)
    path = journal.format(order=order.pk)
    response = getattr(auth_client, method)(path)
    assert response.status_code == 405
    assert response.json()["code"] == "method_not_allowed"
    assert response["Allow"] == "GET, HEAD"
    assert auth_client.head(path).status_code == 200
