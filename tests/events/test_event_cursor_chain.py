"""Idle polling (docs/design.md "Event journal"): every response carries a `next_cursor` that
differs from the request's, also on an empty page, while the position it resumes at stays the same.

Generated API clients follow `meta.next_cursor` and refuse a cursor equal to the one they just
sent (cycle detection), so a repeated cursor would stop them exactly when the journal is quiet.
"""

import pytest
from django.core import signing

from events.cursors import CURSOR_SALT, cursor_seal, filters_fingerprint
from orders.services import order_complete, order_place
from tests.events.helpers import record_committed

pytestmark = pytest.mark.django_db(transaction=True)

IDLE_POLLS = 20
EVENT_AFTER_POLL = 10


def _journal(store):
    """The whole journal, and how to add one event to it."""
    return "/api/v2/events", lambda: record_committed(store).id


def _order_journal(store):
    """One order's journal, and how to add its `order.completed` to it."""
    order = order_place(store=store, subtotal_cents=500)
    return f"/api/v2/orders/{order.pk}/events", lambda: _completed_event_id(order)


def _completed_event_id(order) -> str:
    order_complete(order=order)
    return order.store.events.get(type="order.completed", subject_id=str(order.pk)).id


@pytest.fixture(params=[_journal, _order_journal], ids=["events", "order-events"])
def journal(request, store):
    return request.param(store)


def _poll(client, url, cursor):
    response = client.get(url, {"cursor": cursor} if cursor is not None else {})
    assert response.status_code == 200, response.json()
    body = response.json()
    return [event["id"] for event in body["data"]], body["meta"]["next_cursor"]


def test_idle_polls_get_a_new_cursor_each_time_and_see_a_new_event_once(auth_client, journal):
    url, record_one = journal
    # given a first poll of the (empty) journal
    served, cursor = _poll(auth_client, url, None)
    assert served == []
    chain, seen, recorded = [cursor], [], None
    # when it is polled 20 times, following next_cursor, with one event recorded after the 10th
    for poll in range(1, IDLE_POLLS + 1):
        served, next_cursor = _poll(auth_client, url, chain[-1])
        # then no response repeats the cursor it was sent
        assert next_cursor != chain[-1], poll
        seen.extend(served)
        chain.append(next_cursor)
        if poll == EVENT_AFTER_POLL:
            recorded = record_one()
    # then the 21 cursors of the chain are distinct and the event was served exactly once
    assert len(set(chain)) == len(chain) == IDLE_POLLS + 1
    assert seen == [recorded]


def test_every_older_cursor_of_the_chain_still_reads_the_same_events(auth_client, journal):
    url, record_one = journal
    # given a chain of idle polls, an event recorded after the 10th, and more polls after it
    chain = [_poll(auth_client, url, None)[1]]
    recorded = None
    for poll in range(1, IDLE_POLLS + 1):
        chain.append(_poll(auth_client, url, chain[-1])[1])
        if poll == EVENT_AFTER_POLL:
            recorded = record_one()
    # when each cursor is read again
    # then it serves what its position is behind: the event for every cursor issued before the
    # event was recorded, nothing for every one issued after it was served
    for index, cursor in enumerate(chain):
        served, next_cursor = _poll(auth_client, url, cursor)
        expected = [recorded] if index <= EVENT_AFTER_POLL else []
        assert served == expected, index
        assert next_cursor != cursor, index


def _signed(payload: dict) -> str:
    """A cursor as the server signed it before sealing (events/cursors.py), with a payload of
    our choosing."""
    return signing.dumps(payload, salt=CURSOR_SALT, compress=True)


def test_a_cursor_issued_before_the_chain_sequence_is_accepted(auth_client, store):
    # given a cursor in the earlier encoding (no "n"), positioned on a served event
    seen = record_committed(store, subject=("coupon", "1"))
    new = record_committed(store, subject=("coupon", "2"))
    legacy = _signed(
        {"s": store.pk, "f": filters_fingerprint({}), "p": [seen.txid, seen.id], "m": None}
    )
    # when / then it resumes after that event, and answers with a different cursor
    served, next_cursor = _poll(auth_client, "/api/v2/events", legacy)
    assert served == [new.id]
    assert next_cursor != legacy


@pytest.mark.parametrize("seal", [cursor_seal, _signed], ids=["sealed", "signed"])
@pytest.mark.parametrize("sequence", [-1, "1", 1.5, None, True])
def test_a_cursor_with_a_malformed_sequence_is_400(auth_client, store, sequence, seal):
    cursor = seal(
        {"s": store.pk, "f": filters_fingerprint({}), "p": None, "m": None, "n": sequence}
    )
    response = auth_client.get("/api/v2/events", {"cursor": cursor})
    assert response.status_code == 400
    assert response.json()["code"] == "bad_request"
    assert response.json()["param"] == "cursor"
