"""Helpers of the event journal tests: an event recorded as a service records it, and a walk of
every page of a list."""

from django.db import transaction

from events.services import record


def record_committed(store, type="coupon.created", subject=("coupon", "1"), data=None):
    """Records one event in its own committed transaction, as a service would."""
    with transaction.atomic():
        return record(store=store, type=type, subject=subject, data=data)


def poll_all(client, url="/api/v2/events", params=None, limit=100):
    """Follows next_cursor until has_more is false; returns (events, last next_cursor)."""
    params = dict(params or {})
    params["limit"] = limit
    seen = []
    while True:
        response = client.get(url, params)
        assert response.status_code == 200, response.json()
        body = response.json()
        seen.extend(body["data"])
        params["cursor"] = body["meta"]["next_cursor"]
        if not body["meta"]["has_more"]:
            return seen, params["cursor"]
