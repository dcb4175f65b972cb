"""The journal's days (docs/decisions/events.md "Partitioned by day"): upkeep keeps a week of
partitions ahead in the three tables, /status and /metrics tell when tomorrow has none, and an
event for a day without a partition fails instead of landing anywhere."""

import ipaddress
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.test import Client
from django.utils import timezone

from core.database.partitions import partition_name, partitions_list
from events.models import Event
from events.partitions import legacy_partition, partitions_ahead, partitions_ensure
from events.services import events_prune, partitions_upkeep
from tests.concurrency import run_at_once
from tests.core.operations.metrics import SCRAPER_ADDRESS, scrape, value
from tests.events.helpers import record_committed
from tests.factories import WebhookChannelFactory, events_age
from tests.migrations import migrate, migrate_to_latest
from webhooks.models import WebhookDelivery, WebhookDeliveryAttempt, WebhookDeliveryTotal

PLAIN = [("events", "0002_event_positions"), ("webhooks", "0011_channels")]
PARTITIONED = [("events", "0003_partitioned_by_day"), ("webhooks", "0013_partitioned_by_day")]
TABLES = ("events_event", "webhooks_webhookdelivery", "webhooks_webhookdeliveryattempt")


def _next(page):
    return page.json()["meta"]["next_cursor"]


def days_of(table):
    with connection.cursor() as cursor:
        return {partition.day for partition in partitions_list(cursor, table)}


def drop(table, day):
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {partition_name(table, day)}")


@pytest.mark.django_db
def test_upkeep_creates_today_and_seven_days_ahead_in_each_table_once(settings):
    # given production's week ahead, and only today and tomorrow in every table (the suite
    # keeps one day ahead: config/settings/test.py)
    settings.EVENTS_PARTITIONS_AHEAD = 7
    today = timezone.now().date()
    for table in TABLES:
        for ahead in range(2, 8):
            drop(table, today + timedelta(days=ahead))
    assert partitions_ahead() == 1
    # when
    first = partitions_upkeep()
    second = partitions_upkeep()
    # then
    assert first["created"] == 6
    assert second["created"] == 0
    wanted = {today + timedelta(days=ahead) for ahead in range(8)}
    for table in TABLES:
        assert wanted <= days_of(table), table
    assert partitions_ahead() == 7


@pytest.mark.django_db(transaction=True)
def test_two_upkeeps_at_once_create_each_day_once():
    today = timezone.now().date()
    first, last = today + timedelta(days=20), today + timedelta(days=24)
    try:
        # when two processes' upkeeps create the same new days at the same moment
        outcomes = run_at_once(lambda: partitions_ensure(first, last), 2)
        # then neither fails and each day was created once (the two take turns day by day)
        assert all(isinstance(created, int) for created in outcomes), outcomes
        assert sum(outcomes) == 5
        for table in TABLES:
            assert {first + timedelta(days=n) for n in range(5)} <= days_of(table)
    finally:
        for table in reversed(TABLES):
            for n in range(5):
                drop(table, first + timedelta(days=n))


@pytest.mark.django_db(transaction=True)
def test_status_fails_and_the_metric_is_0_when_tomorrow_has_no_partition(settings):
    settings.METRICS_ALLOWED_NETWORKS = (ipaddress.ip_network(SCRAPER_ADDRESS),)
    tomorrow = timezone.now().date() + timedelta(days=1)
    # given tomorrow's attempts partition is missing (only one of the three tables)
    drop("webhooks_webhookdeliveryattempt", tomorrow)
    try:
        # when
        status = Client().get("/status")
        samples = scrape(Client())
        # then
        assert status.status_code == 503
        body = status.json()
        assert "events_partitions" in body["failing"]
        assert body["checks"]["events_partitions"] == {"status": "missing", "days_ahead": 0}
        assert value(samples, "storefront_events_partitions_ahead") == 0
    finally:
        partitions_ensure(tomorrow, tomorrow)
    # and once upkeep made it again, the days ahead are ready
    body = Client().get("/status").json()
    ahead = settings.EVENTS_PARTITIONS_AHEAD
    assert body["checks"]["events_partitions"] == {"status": "ok", "days_ahead": ahead}
    assert value(scrape(Client()), "storefront_events_partitions_ahead") == ahead


@pytest.mark.django_db
def test_an_event_for_a_day_without_a_partition_fails(store):
    # given no partition for a day 100 days ago (nothing ever creates one that far back)
    long_ago = timezone.now() - timedelta(days=100)
    # when / then: refused by PostgreSQL, never stored elsewhere
    with pytest.raises(IntegrityError, match="no partition"), transaction.atomic():
        Event.objects.create(
            store=store,
            type="coupon.updated",
            version=1,
            subject_type="coupon",
            subject_id="1",
            occurred_at=long_ago,
        )
    assert not Event.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_conversion_keeps_a_populated_journal_and_retention_empties_it_after(
    auth_client, store
):
    # given a journal with deliveries and an attempt, one event 40 days old, and a poller
    # half way through it (the deliveries stay pending: no worker sends them here)
    WebhookChannelFactory(store=store, event_types=["coupon.created"])
    old = record_committed(store, subject=("coupon", "old"))
    events_age(Event.objects.filter(pk=old.pk), timezone.now() - timedelta(days=40))
    recent = [record_committed(store, subject=("coupon", str(n))) for n in range(3)]
    delivery = WebhookDelivery.objects.get(event=recent[0])
    WebhookDeliveryAttempt.objects.create(
        delivery=delivery,
        delivery_event_occurred_at=delivery.event_occurred_at,
        number=1,
        origin="https://hooks.example.com",
        error="timeout",
    )
    page = auth_client.get("/api/v2/events", {"limit": 2})
    assert [event["id"] for event in page.json()["data"]] == [old.id, recent[0].id]
    try:
        # when the tables are plain again, populated, and converted
        migrate(PLAIN)
        migrate(PARTITIONED)
        migrate_to_latest()  # and those after it, whose schema the models read
        # then every row is in its table's legacy partition, and the poller reads on
        for table in TABLES:
            with connection.cursor() as cursor:
                assert partitions_list(cursor, table)[0].name == f"{table}_legacy", table
        assert Event.objects.count() == 4
        assert WebhookDelivery.objects.count() == 4
        assert WebhookDeliveryAttempt.objects.get().delivery_id == delivery.pk
        # and upkeep finds today and tomorrow in the legacy range, the days after ready
        today = timezone.now().date()
        assert partitions_ensure(today, today + timedelta(days=1)) == 0
        assert partitions_ahead() >= 1
        after = auth_client.get("/api/v2/events", {"limit": 2, "cursor": _next(page)})
        assert [event["id"] for event in after.json()["data"]] == [recent[1].id, recent[2].id]
        # and retention deletes the legacy's rows past the window one by one, with their
        # deliveries
        assert events_prune() == 1
        assert set(WebhookDelivery.objects.values_list("event_id", flat=True)) == {
            event.id for event in recent
        }
        # and drops the legacy partitions whole once their range is past it
        legacy = legacy_partition()
        assert events_prune(now=legacy.high + timedelta(days=30)) == 3
        assert legacy_partition() is None
        for table in TABLES:
            with connection.cursor() as cursor:
                assert all(p.day for p in partitions_list(cursor, table)), table
        assert not WebhookDeliveryAttempt.objects.exists()
        assert not WebhookDelivery.objects.exists()
        assert WebhookDeliveryTotal.objects.get(store=store).deliveries == 0
        expired = auth_client.get("/api/v2/events", {"limit": 2, "cursor": _next(page)})
        assert expired.status_code == 410
    finally:
        # the next tests of this database find today's days again
        with connection.cursor() as cursor:
            for table in reversed(TABLES):
                cursor.execute(f"DROP TABLE IF EXISTS {table}_legacy")
        partitions_upkeep()
    # and new events land in the day partitions
    assert record_committed(store, subject=("coupon", "new")).id in set(
        Event.objects.values_list("id", flat=True)
    )
