"""An attempt keeps the origin it was sent to, never the channel's full URL, whose path and
query can be a credential (docs/decisions/hardening.md "Hardening IV"), and
the migration that brought this leaves stored attempts with their origin only."""

from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from tests.webhooks.helpers import Reply, channel_for, record_order_completed
from webhooks.dispatch.attempts import delivery_claim, delivery_send
from webhooks.models import WebhookDelivery, WebhookDeliveryAttempt

SECRET_PATH = "/services/T0001/hook-credential-123"
SECRET_QUERY = "token=query-credential-456"


def stored_attempts(delivery) -> str:
    return str(list(WebhookDeliveryAttempt.objects.filter(delivery=delivery).values()))


def test_an_attempt_is_sent_to_the_full_url_and_keeps_only_its_origin(store, receiver):
    # given a channel whose path and query are its credential, and a receiver failing once
    origin = "http://" + urlsplit(receiver.url).netloc
    channel_for(store, f"{origin}{SECRET_PATH}?{SECRET_QUERY}")
    replies = iter([Reply(500), Reply(200)])
    receiver.respond = lambda request: next(replies)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    # when it is attempted twice, the first worker dying after its claim (its lease lapsed and
    # the schedule's wait after it passed)
    assert delivery_claim(delivery_id=delivery.pk)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        lease_until=timezone.now() - timedelta(seconds=1), next_attempt_at=timezone.now()
    )
    delivery_send(delivery_id=delivery.pk)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
    delivery_send(delivery_id=delivery.pk)

    # then the receiver was called at the full URL, and every attempt row holds the origin only
    assert [request.path for request in receiver.received()] == [
        f"{SECRET_PATH}?{SECRET_QUERY}"
    ] * 2
    attempts = WebhookDeliveryAttempt.objects.filter(delivery=delivery).order_by("number")
    assert [attempt.origin for attempt in attempts] == [origin] * 3
    assert attempts[0].error.startswith("abandoned")
    assert "hook-credential-123" not in stored_attempts(delivery)
    assert "query-credential-456" not in stored_attempts(delivery)


BEFORE = [("webhooks", "0008_scrub_stored_attempt_errors")]
AFTER = [("webhooks", "0009_attempt_origin")]


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_only_the_origin_of_attempts_stored_before(store):
    # given attempts stored with full URLs by the schema before the migration
    channel_for(store, "http://127.0.0.1:9")
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    stored_urls = {
        1: f"https://Hooks.Example.com{SECRET_PATH}?{SECRET_QUERY}",
        2: f"https://hooks.example.com:8443/?{SECRET_QUERY}",
        3: "http://[2001:db8::1]:8080/in",
        4: "https://hooks.example.com",
        5: "",
    }
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        with connection.cursor() as cursor:
            for number, url in stored_urls.items():
                cursor.execute(
                    "INSERT INTO webhooks_webhookdeliveryattempt (delivery_id, number, url, "
                    "started_at, error) VALUES (%s, %s, %s, now(), '')",
                    [delivery.pk, number, url],
                )

        # when the migration runs
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())

    # then each keeps its origin, as new attempts store it
    origins = dict(
        WebhookDeliveryAttempt.objects.filter(delivery=delivery).values_list("number", "origin")
    )
    assert origins == {
        1: "https://hooks.example.com",
        2: "https://hooks.example.com:8443",
        3: "http://[2001:db8::1]:8080",
        4: "https://hooks.example.com",
        5: "",
    }
    assert "credential" not in stored_attempts(delivery)
