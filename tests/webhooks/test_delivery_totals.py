"""The delivery list's `meta.total`: unfiltered, the store's counter kept by PostgreSQL
triggers (exact after every write: creation, replay, the retention prune, a store's deletion);
filtered, a count of the matching deliveries."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from events.models import Event
from events.services import events_prune, record
from tests.factories import MembershipFactory, WebhookChannelFactory, events_age
from webhooks.deliveries.services import delivery_replay
from webhooks.models import WebhookDelivery, WebhookDeliveryTotal

pytestmark = pytest.mark.django_db

LIST_URL = "/api/v2/webhook-deliveries"


def with_channel(store) -> None:
    # Deliveries are created for it; none is sent (no commit ends these tests' transaction).
    WebhookChannelFactory(store=store, event_types=["coupon.updated"])


def record_events(store, count: int) -> list[Event]:
    with transaction.atomic():
        return [
            record(store=store, type="coupon.updated", subject=("coupon", n)) for n in range(count)
        ]


def listed_total(client, store, **filters) -> tuple[int, list[str]]:
    """`meta.total` of the store's delivery list and the statements that read deliveries."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(LIST_URL, {"limit": 2, **filters}, HTTP_X_STORE=store.slug)
    assert response.status_code == 200, response.content
    read = [q["sql"] for q in queries if "webhooks_webhookdelivery" in q["sql"]]
    return response.json()["meta"]["total"], read


def total(client, store, **filters) -> int:
    return listed_total(client, store, **filters)[0]


def test_the_unfiltered_total_is_the_counter_and_a_filtered_one_is_counted(store, auth_client):
    with_channel(store)
    events = record_events(store, 5)
    WebhookDelivery.objects.filter(event__in=events[:2]).update(status="succeeded")

    listed, statements = listed_total(auth_client, store)
    assert listed == 5 == WebhookDelivery.objects.filter(store=store).count()
    assert len(statements) == 1 and "webhooks_webhookdeliverytotal" in statements[0]
    assert "COUNT(" not in statements[0]

    listed, statements = listed_total(auth_client, store, status="succeeded")
    assert listed == 2
    assert len(statements) == 1 and "COUNT(" in statements[0]
    assert total(auth_client, store, status="pending") == 3
    assert total(auth_client, store, event_id=events[0].id) == 1
    assert total(auth_client, store, event_type="coupon.updated") == 5
    assert total(auth_client, store, event_type="order.completed") == 0


def test_a_page_past_the_end_takes_the_counter(store, auth_client):
    with_channel(store)
    record_events(store, 3)
    response = auth_client.get(LIST_URL, {"limit": 2, "page": 5})
    body = response.json()
    assert (body["data"], body["meta"]["total"], body["meta"]["last_page"]) == ([], 3, 2)


def test_a_replay_is_counted(store, auth_client):
    with_channel(store)
    original = WebhookDelivery.objects.get(event=record_events(store, 1)[0])

    delivery_replay(store=store, delivery_id=original.pk)

    assert total(auth_client, store) == 2


def test_the_retention_prune_is_counted_per_store(store, auth_client, user):
    second = MembershipFactory(user=user).store
    for s in (store, second):
        with_channel(s)
        record_events(s, 30)
    events_age(
        Event.objects.filter(subject_id__in=[str(n) for n in range(20)]),
        timezone.now() - timedelta(days=31),
    )

    assert events_prune() == 40  # one day of both stores, dropped

    for s in (store, second):
        assert total(auth_client, s) == 10 == WebhookDelivery.objects.filter(store=s).count()


@pytest.mark.django_db(transaction=True)
def test_deleting_a_store_removes_its_counter_and_commits(user):
    doomed = MembershipFactory(user=user).store
    kept = MembershipFactory(user=user).store
    for s in (doomed, kept):
        with_channel(s)
        record_events(s, 4)

    with transaction.atomic():  # the deferred foreign keys are checked at this commit
        doomed.delete()

    assert not WebhookDeliveryTotal.objects.filter(store_id=doomed.pk).exists()
    assert WebhookDeliveryTotal.objects.get(store=kept).deliveries == 4


def test_recount_lists_repairs_the_delivery_counter(store, auth_client):
    with_channel(store)
    record_events(store, 3)
    WebhookDeliveryTotal.objects.filter(store=store).update(deliveries=40)
    assert total(auth_client, store) == 40

    out = StringIO()
    call_command("recount_lists", "--store", str(store.pk), stdout=out)

    assert f"deliveries: store {store.pk} deliveries was 40, is 3 (repaired)" in out.getvalue()
    assert total(auth_client, store) == 3


def test_a_delivery_cannot_move_to_another_store(store, other_store, auth_client):
    """The delivery counter has no UPDATE trigger (updates are the sending hot path); the one
    update that would change a total, a change of store, is refused instead."""
    with_channel(store)
    record_events(store, 2)
    WebhookDelivery.objects.filter(store=store).update(status="succeeded", attempts=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        WebhookDelivery.objects.filter(store=store).update(store=other_store)
    assert total(auth_client, store) == 2 == WebhookDelivery.objects.filter(store=store).count()
