"""Counters incremented in a Celery worker's pool processes reach /metrics of the web process
(prometheus_client multiprocess mode: one PROMETHEUS_MULTIPROC_DIR shared by both)."""

import pytest

from tests.core.operations.metrics import scrape, value
from tests.servers import wait_for
from tests.webhooks.helpers import Reply, channel_for, record_order_completed
from webhooks.models import WebhookDelivery

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

ATTEMPTS = "storefront_webhook_delivery_attempts_total"
FINISHED = "storefront_webhook_deliveries_finished_total"


def final(event):
    return WebhookDelivery.objects.filter(event=event, status__in=["succeeded", "failed"]).exists()


def moved(before, after, name, **labels):
    return value(after, name, **labels) - value(before, name, **labels)


def test_worker_attempts_and_outcomes_are_counted(celery_worker, store, receiver, scraper):
    channel_for(store, receiver.url)
    before = scrape(scraper)

    # a delivery that succeeds at once
    delivered = record_order_completed(store, order_id=1)
    wait_for(lambda: final(delivered), timeout=20, what="first delivery final")
    # and one that never gets a 2xx: four attempts (WORKER_ENV: three retries), then failed
    receiver.respond = lambda request: Reply(500, b"down")
    refused = record_order_completed(store, order_id=2)
    wait_for(lambda: final(refused), timeout=20, what="second delivery final")

    # the pool process writes its counters after recording the outcome: allow it a moment
    def counted():
        after = scrape(scraper)
        return after if moved(before, after, FINISHED, status="failed") == 1 else None

    after = wait_for(counted, timeout=10, what="worker counters in /metrics")
    assert moved(before, after, ATTEMPTS, result="succeeded") == 1
    assert moved(before, after, ATTEMPTS, result="http_error") == 4
    assert moved(before, after, FINISHED, status="succeeded") == 1
    assert moved(before, after, FINISHED, status="failed") == 1


def test_a_refused_connection_is_a_network_error(celery_worker, store, scraper):
    # a port nothing listens on: the attempt gets no response at all
    channel_for(store, "http://127.0.0.1:9/hooks")
    before = scrape(scraper)
    event = record_order_completed(store)
    wait_for(lambda: final(event), timeout=30, what="delivery final")

    def counted():
        after = scrape(scraper)
        return after if moved(before, after, FINISHED, status="failed") == 1 else None

    after = wait_for(counted, timeout=10, what="worker counters in /metrics")
    assert moved(before, after, ATTEMPTS, result="network_error") == 4
