"""The journal never serves an event that a later-committing transaction could precede."""

import threading

import pytest
from django.db import connection, transaction

from events.services import record
from tests.events.helpers import record_committed

pytestmark = pytest.mark.django_db(transaction=True)


class OpenTransaction:
    """Records one event in a thread whose transaction stays open until `commit()`."""

    def __init__(self, store, subject_id: str):
        self.recorded = threading.Event()
        self.release = threading.Event()
        self.event_id = None
        self.error = None
        self.thread = threading.Thread(target=self._run, args=(store, subject_id))
        self.thread.start()
        assert self.recorded.wait(10), self.error

    def _run(self, store, subject_id):
        try:
            with transaction.atomic():
                self.event_id = record(
                    store=store, type="coupon.created", subject=("coupon", subject_id)
                ).id
                self.recorded.set()
                self.release.wait(10)
        except Exception as error:  # surfaced by the assertion in __init__
            self.error = error
        finally:
            connection.close()

    def commit(self):
        self.release.set()
        self.thread.join(10)


def _ids(response):
    return [e["id"] for e in response.json()["data"]]


def test_an_uncommitted_event_is_not_served(auth_client, store):
    # given a transaction that recorded an event and has not committed
    open_tx = OpenTransaction(store, "1")
    try:
        # when
        response = auth_client.get("/api/v2/events")
        # then
        assert _ids(response) == []
        assert response.json()["meta"]["has_more"] is False
    finally:
        open_tx.commit()
    assert _ids(auth_client.get("/api/v2/events")) == [open_tx.event_id]


def test_a_later_commit_waits_behind_an_earlier_open_transaction(auth_client, store):
    # given an earlier transaction still open, and a later one committed
    earlier = OpenTransaction(store, "1")
    try:
        later = record_committed(store, subject=("coupon", "2"))
        page = auth_client.get("/api/v2/events")
        # then the later event is held back: serving it would move the cursor past `earlier`
        assert _ids(page) == []
        cursor = page.json()["meta"]["next_cursor"]
    finally:
        earlier.commit()
    # when the earlier transaction commits, the poller gets both, earlier first
    after = auth_client.get("/api/v2/events", {"cursor": cursor})
    assert _ids(after) == [earlier.event_id, later.id]


def test_a_filtered_page_that_is_not_full_does_not_move_past_an_open_transaction(
    auth_client, store
):
    # given a served match, then an open transaction with a match, then a committed match
    params = {"type": "coupon.created"}
    served = record_committed(store, subject=("coupon", "0"))
    earlier = OpenTransaction(store, "1")
    try:
        later = record_committed(store, subject=("coupon", "2"))
        page = auth_client.get("/api/v2/events", params)
        # then the page is not full, yet its scanned-through position stays below `earlier`
        assert _ids(page) == [served.id]
        assert page.json()["meta"]["has_more"] is False
        cursor = page.json()["meta"]["next_cursor"]
    finally:
        earlier.commit()
    # when it commits, the next page holds both held-back matches, in order, exactly once
    after = auth_client.get("/api/v2/events", {**params, "cursor": cursor})
    assert _ids(after) == [earlier.event_id, later.id]
    last = auth_client.get(
        "/api/v2/events", {**params, "cursor": after.json()["meta"]["next_cursor"]}
    )
    assert _ids(last) == []
