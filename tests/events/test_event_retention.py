import logging
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from core.database.partitions import day_start, partitions_list
from events.models import Event
from events.services import events_prune
from events.tasks import partitions_upkeep_task
from tests.concurrency import run_at_once
from tests.events.helpers import record_committed
from tests.factories import events_age, old_events


@pytest.mark.django_db
def test_prune_drops_a_day_of_10000_old_events_at_once_and_keeps_recent_ones(
    store, other_store, caplog
):
    # given 10,000 events past retention (two stores, one day) and recent ones
    old_events(store, 6_000)
    old_events(other_store, 4_000)
    fresh = record_committed(store)
    boundary = old_events(store, 1, age_days=29)[0]
    # when
    with caplog.at_level(logging.INFO, logger="events.partitions"):
        deleted = events_prune()
    # then the day's partition went as a whole
    assert deleted == 10_000
    assert set(Event.objects.values_list("id", flat=True)) == {fresh.id, boundary.id}
    day = (timezone.now() - timedelta(days=31)).date()
    assert [r.getMessage() for r in caplog.records] == [
        f"events retention: dropped events_event_p{day:%Y%m%d} (10000 events)"
    ]
    with connection.cursor() as cursor:
        assert f"events_event_p{day:%Y%m%d}" not in {
            partition.name for partition in partitions_list(cursor, "events_event")
        }


@pytest.mark.django_db
def test_the_upkeep_task_is_scheduled_hourly_and_runs(store):
    old_events(store, 3)
    schedule = settings.CELERY_BEAT_SCHEDULE["events-partitions"]
    assert schedule["task"] == "events.partitions"
    assert schedule["schedule"].minute == {23}
    partitions_upkeep_task()
    assert Event.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_cursor_before_pruned_events_is_410_with_the_fallback_body(auth_client, store):
    # given a poller that has seen the first event; later events then age past retention
    first = record_committed(store, subject=("coupon", "1"))
    record_committed(store, subject=("coupon", "2"))
    record_committed(store, subject=("coupon", "3"))
    cursor = auth_client.get("/api/v2/events", {"limit": 1}).json()["meta"]["next_cursor"]
    events_age(Event.objects.exclude(pk=first.pk), timezone.now() - timedelta(days=31))
    events_prune()
    # when
    response = auth_client.get("/api/v2/events", {"limit": 1, "cursor": cursor})
    # then
    assert response.status_code == 410
    body = response.json()
    assert body["status"] == 410
    assert body["type"] == "invalid_request_error"
    assert body["code"] == "cursor_expired"
    assert body["param"] == "cursor"
    assert body["message"]
    assert body["fallback"] == {
        "transport": "cursor_polling",
        "url": f"{settings.BASE_URL}/api/v2/events?limit=1",
    }
    # and the fallback URL starts polling again
    restart = auth_client.get("/api/v2/events", {"limit": 1})
    assert [e["id"] for e in restart.json()["data"]] == [first.id]


@pytest.mark.django_db(transaction=True)
def test_a_caught_up_cursor_survives_the_pruning_of_what_it_has_seen(auth_client, store):
    # given a poller that has seen everything, then retention deletes all of it
    record_committed(store, subject=("coupon", "1"))
    record_committed(store, subject=("coupon", "2"))
    cursor = auth_client.get("/api/v2/events").json()["meta"]["next_cursor"]
    events_age(Event.objects, timezone.now() - timedelta(days=31))
    assert events_prune() == 2
    # when the idle store is polled again, then nothing was missed: no 410
    idle = auth_client.get("/api/v2/events", {"cursor": cursor})
    assert idle.status_code == 200
    assert idle.json()["data"] == []
    new = record_committed(store, subject=("coupon", "3"))
    after = auth_client.get("/api/v2/events", {"cursor": idle.json()["meta"]["next_cursor"]})
    assert [e["id"] for e in after.json()["data"]] == [new.id]


@pytest.mark.django_db(transaction=True)
def test_pruning_another_store_does_not_expire_this_stores_cursor(auth_client, store, other_store):
    record_committed(store)
    cursor = auth_client.get("/api/v2/events").json()["meta"]["next_cursor"]
    old_events(other_store, 5)
    events_prune()
    assert auth_client.get("/api/v2/events", {"cursor": cursor}).status_code == 200


@pytest.mark.django_db
def test_prune_deletes_the_webhook_deliveries_of_pruned_events(store):
    from tests.factories import WebhookChannelFactory
    from webhooks.models import WebhookDelivery

    # given events with deliveries (pending: no worker sends them here)
    WebhookChannelFactory(store=store, event_types=["coupon.updated"])
    for n in range(300):
        record_committed(store, type="coupon.updated", subject=("coupon", str(n)))
    kept = record_committed(store, type="coupon.updated", subject=("coupon", "new"))
    assert WebhookDelivery.objects.count() == 301
    events_age(Event.objects.exclude(pk=kept.pk), timezone.now() - timedelta(days=31))
    # when
    deleted = events_prune(batch_size=100)
    # then
    assert deleted == 300
    assert list(WebhookDelivery.objects.values_list("event_id", flat=True)) == [kept.id]


@pytest.mark.django_db(transaction=True)
def test_a_poller_starting_after_a_prune_is_not_expired_by_it(auth_client, store):
    # given a store whose whole history was pruned before the poller started
    record_committed(store, subject=("coupon", "old"))
    events_age(Event.objects, timezone.now() - timedelta(days=31))
    assert events_prune() == 1
    # when a new poller starts (empty page) and polls on with its cursor
    empty = auth_client.get("/api/v2/events").json()
    assert empty["data"] == []
    again = auth_client.get("/api/v2/events", {"cursor": empty["meta"]["next_cursor"]})
    # then
    assert again.status_code == 200
    new = record_committed(store, subject=("coupon", "new"))
    after = auth_client.get("/api/v2/events", {"cursor": again.json()["meta"]["next_cursor"]})
    assert [e["id"] for e in after.json()["data"]] == [new.id]


@pytest.mark.django_db(transaction=True)
def test_an_idle_start_cursor_expires_once_unseen_events_are_pruned(auth_client, store):
    # given a poller that got an empty first page and then stopped polling
    cursor = auth_client.get("/api/v2/events").json()["meta"]["next_cursor"]
    record_committed(store)
    events_age(Event.objects, timezone.now() - timedelta(days=31))
    events_prune()
    # when it comes back after retention deleted the event it never saw, then 410
    response = auth_client.get("/api/v2/events", {"cursor": cursor})
    assert response.status_code == 410
    assert response.json()["fallback"]["url"] == f"{settings.BASE_URL}/api/v2/events"


@pytest.mark.django_db(transaction=True)
def test_overlapping_prune_runs_delete_each_event_once(store, other_store):
    from events.models import EventPruneMark

    # given
    created = old_events(store, 1_500) + old_events(other_store, 1_500)
    highest = {
        store_id: max((e.txid, e.id) for e in created if e.store_id == store_id)
        for store_id in (store.pk, other_store.pk)
    }

    # when two prune runs overlap
    results = run_at_once(lambda: events_prune(batch_size=200), 2)

    # then
    assert not [r for r in results if isinstance(r, BaseException)], results
    assert sum(results) == 3_000
    assert not Event.objects.exists()
    marks = {m.store_id: (m.txid, m.event_id) for m in EventPruneMark.objects.all()}
    assert marks == highest


@pytest.mark.django_db
def test_prune_events_command_reports_what_it_deleted(store):
    import io

    from django.core.management import call_command

    old_events(store, 4)
    out = io.StringIO()
    call_command("prune_events", "--batch-size", "3", stdout=out)
    assert "Deleted 4 events." in out.getvalue()
    assert not Event.objects.exists()


def _ids(response) -> list[str]:
    assert response.status_code == 200, response.json()
    return [e["id"] for e in response.json()["data"]]


def _next(response) -> str:
    return response.json()["meta"]["next_cursor"]


@pytest.mark.django_db(transaction=True)
def test_a_caught_up_order_events_cursor_survives_pruning_of_other_events(auth_client, store):
    from orders.services import order_complete, order_place

    # given a poller of one order that has seen its event and polls on while the store writes
    # other events (already past retention) after it in the journal
    order = order_place(store=store, subtotal_cents=1200, currency="USD")
    order_complete(order=order)
    url = f"/api/v2/orders/{order.pk}/events"
    first = auth_client.get(url)
    assert len(_ids(first)) == 1
    old_events(store, 3)
    polled = auth_client.get(url, {"cursor": _next(first)})
    assert _ids(polled) == []
    # when retention deletes the other events: the store's prune mark moves past the order's
    assert events_prune() == 3
    # then the order's cursor polls on, and sees a new event of the order exactly once
    idle = auth_client.get(url, {"cursor": _next(polled)})
    assert _ids(idle) == []
    new = record_committed(
        store,
        type="order.completed",
        subject=("order", str(order.pk)),
        data={"total_cents": 1200, "currency": "USD"},
    )
    after = auth_client.get(url, {"cursor": _next(idle)})
    assert _ids(after) == [new.id]
    assert _ids(auth_client.get(url, {"cursor": _next(after)})) == []


@pytest.mark.django_db(transaction=True)
def test_a_caught_up_type_filtered_cursor_survives_pruning_of_other_events(auth_client, store):
    # given a `type=` poller that has seen its event and polls on while the store writes
    # events of another type (already past retention) after it in the journal
    params = {"type": "coupon.created"}
    record_committed(store, type="coupon.created")
    first = auth_client.get("/api/v2/events", params)
    assert len(_ids(first)) == 1
    old_events(store, 3)  # coupon.updated
    polled = auth_client.get("/api/v2/events", {**params, "cursor": _next(first)})
    assert _ids(polled) == []
    # when
    assert events_prune() == 3
    # then
    idle = auth_client.get("/api/v2/events", {**params, "cursor": _next(polled)})
    assert _ids(idle) == []
    new = record_committed(store, type="coupon.created", subject=("coupon", "2"))
    after = auth_client.get("/api/v2/events", {**params, "cursor": _next(idle)})
    assert _ids(after) == [new.id]
    assert _ids(auth_client.get("/api/v2/events", {**params, "cursor": _next(after)})) == []


@pytest.mark.django_db(transaction=True)
def test_a_filtered_cursor_catching_up_survives_pruning_of_other_events_between_pages(
    auth_client, store
):
    # given a `type=` poller one page into its backlog; other events lie between its matches
    params = {"type": "coupon.created", "limit": 1}
    first_match = record_committed(store, type="coupon.created", subject=("coupon", "1"))
    old_events(store, 2)  # coupon.updated
    second_match = record_committed(store, type="coupon.created", subject=("coupon", "2"))
    first = auth_client.get("/api/v2/events", params)
    assert _ids(first) == [first_match.id]
    assert first.json()["meta"]["has_more"] is True
    # when retention deletes the events between the two matches
    assert events_prune() == 2
    # then the next page is the second match, not a 410
    second = auth_client.get("/api/v2/events", {**params, "cursor": _next(first)})
    assert _ids(second) == [second_match.id]


@pytest.mark.django_db(transaction=True)
def test_a_filtered_cursor_whose_unseen_matching_events_were_pruned_is_410(auth_client, store):
    # given a caught-up `type=` poller (past some events of another type) that stops polling
    params = {"type": "coupon.created"}
    record_committed(store, type="coupon.created", subject=("coupon", "1"))
    old_events(store, 2)  # coupon.updated
    cursor = _next(auth_client.get("/api/v2/events", params))
    # while a matching event is recorded and then ages past retention unseen
    unseen = record_committed(store, type="coupon.created", subject=("coupon", "2"))
    events_age(Event.objects.filter(pk=unseen.pk), timezone.now() - timedelta(days=31))
    assert events_prune() == 3
    # when it comes back, then 410: it missed an event of its type
    response = auth_client.get("/api/v2/events", {**params, "cursor": cursor})
    assert response.status_code == 410
    assert response.json()["code"] == "cursor_expired"
    assert response.json()["fallback"]["url"] == (
        f"{settings.BASE_URL}/api/v2/events?type=coupon.created"
    )


@pytest.mark.django_db
def test_the_retention_cutoff_is_a_day_whose_end_is_30_days_old(store):
    # given an event at noon of the day 31 days before today, and one at the very start of the
    # day 30 days before today (whole days go: docs/decisions/events.md "Partitioned by day")
    today = day_start(timezone.now().date())
    older, newer = old_events(store, 2, age_days=0)
    events_age(Event.objects.filter(pk=older.pk), today - timedelta(days=31) + timedelta(hours=12))
    events_age(Event.objects.filter(pk=newer.pk), today - timedelta(days=30))
    # when the older day ended one second less than 30 days ago, then nothing goes
    assert events_prune(now=today - timedelta(seconds=1)) == 0
    # when it ended exactly 30 days ago, then its event goes, and the event exactly 30 days
    # old stays (its day ended 29 days ago)
    assert events_prune(now=today) == 1
    assert list(Event.objects.values_list("id", flat=True)) == [newer.id]


@pytest.mark.django_db(transaction=True)
def test_a_cursor_stopped_inside_a_transaction_on_the_last_pruned_event_is_not_expired(
    auth_client, store
):
    from django.db import transaction

    from events.services import record

    # given two events of one transaction, and a poller that has read the first of them
    with transaction.atomic():
        first = record(store=store, type="coupon.created", subject=("coupon", "1"))
        second = record(store=store, type="coupon.created", subject=("coupon", "2"))
    assert first.txid == second.txid
    page = auth_client.get("/api/v2/events", {"limit": 1})
    assert _ids(page) == [first.id]
    # when retention deletes exactly that first event
    events_age(Event.objects.filter(pk=first.pk), timezone.now() - timedelta(days=31))
    assert events_prune() == 1
    # then the cursor missed nothing: it reads the second event of the transaction, not a 410
    after = auth_client.get("/api/v2/events", {"limit": 1, "cursor": _next(page)})
    assert _ids(after) == [second.id]
