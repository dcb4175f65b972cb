"""A store's channels and one event's fan-out are bounded (docs/decisions/hardening.md,
Hardening V, 4): at most WEBHOOKS_STORE_CHANNELS_MAX channels however they are made, a disabled
channel gets no delivery rows, one event's fan-out costs the same few statements whatever the
number of channels, and no event takes a store past WEBHOOKS_STORE_PENDING_MAX pending
deliveries."""

import itertools
import logging

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from config.celery import app
from core.api.errors import ValidationFailed
from tests.concurrency import run_at_once
from tests.factories import StoreFactory, WebhookChannelFactory
from tests.webhooks.helpers import queued, record_order_completed
from webhooks.channels.services import channel_create
from webhooks.models import WebhookChannel, WebhookDelivery

pytestmark = pytest.mark.django_db

URL = "/api/v2/webhook-channels"


def channels(store, count, path="", **fields):
    return [
        WebhookChannelFactory(store=store, url=f"https://hooks.example.com/{path}{n}", **fields)
        for n in range(count)
    ]


def test_the_channels_api_refuses_a_channel_past_the_cap(auth_client, store, receiver, settings):
    # given: a store at its cap
    settings.WEBHOOKS_STORE_CHANNELS_MAX = 2
    channels(store, 2)
    # when
    response = auth_client.post(
        URL,
        {"url": f"{receiver.url}/third", "allowed_notifications": ["order.completed"]},
        format="json",
    )
    # then: a 422 in the envelope, and still two channels
    assert response.status_code == 422, response.json()
    body = response.json()
    assert (body["code"], body["param"]) == ("validation_failed", "non_field_errors")
    assert "at most 2 webhook channels" in body["message"]
    assert WebhookChannel.objects.filter(store=store).count() == 2


def test_the_deprecated_channel_never_adds_a_channel_past_the_cap(
    auth_client, store, receiver, settings
):
    # given: a store at its cap of one (the alias only ever creates the first channel)
    settings.WEBHOOKS_STORE_CHANNELS_MAX = 1
    put = {"url": f"{receiver.url}/a", "event_types": ["order.completed"]}
    assert auth_client.put("/api/v2/webhook-destination", put, format="json").status_code == 201
    # when
    again = auth_client.put(
        "/api/v2/webhook-destination", {**put, "url": f"{receiver.url}/b"}, format="json"
    )
    # then: it replaced the store's first channel
    assert again.status_code == 200
    assert list(WebhookChannel.objects.filter(store=store).values_list("url", flat=True)) == [
        f"{receiver.url}/b"
    ]


def test_the_admin_makes_no_channel(admin_client):
    # Channels are made through the API only (its URL checks); the cap is enforced there.
    assert admin_client.get("/admin/webhooks/webhookchannel/add/").status_code == 403


@pytest.mark.django_db(transaction=True)
def test_concurrent_creates_cannot_pass_the_cap_together(settings):
    # given: a store with room for two more channels, and six creates released at once
    settings.WEBHOOKS_STORE_CHANNELS_MAX = 3
    store = StoreFactory()
    channels(store, 1)
    numbers = itertools.count()

    def create():
        url = f"https://hooks.example.com/race-{next(numbers)}"
        return channel_create(store=store, url=url, allowed_notifications=["order.completed"])

    # when
    outcomes = run_at_once(create, 6)
    # then: exactly two were made, the others refused with the cap's 422
    made = [o for o in outcomes if isinstance(o, WebhookChannel)]
    refused = [o for o in outcomes if isinstance(o, ValidationFailed)]
    assert (len(made), len(refused)) == (2, 4), outcomes
    assert WebhookChannel.objects.filter(store=store).count() == 3


def test_a_disabled_channel_gets_no_delivery_rows(store):
    # given
    on, off = channels(store, 2)
    WebhookChannel.objects.filter(pk=off.pk).update(enabled=False)
    # when
    event = record_order_completed(store)
    # then
    deliveries = WebhookDelivery.objects.filter(event=event)
    assert {d.channel_id: d.status for d in deliveries} == {on.pk: "pending"}


def fan_out_statements(store) -> int:
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        record_order_completed(store)
    return len(queries)


def test_one_event_s_fan_out_costs_the_same_statements_for_one_channel_or_many():
    # given: a store with one channel and a store with many (and disabled ones)
    few, many = StoreFactory(), StoreFactory()
    channels(few, 1)
    channels(many, 12)
    channels(many, 8, path="off-", enabled=False)
    # when
    statements_few = fan_out_statements(few)
    statements_many = fan_out_statements(many)
    # then
    assert statements_many == statements_few
    assert WebhookDelivery.objects.filter(store=many).count() == 12


def test_an_event_past_the_store_s_pending_ceiling_gets_no_deliveries(store, settings, caplog):
    # given: two channels and room for five pending deliveries
    settings.WEBHOOKS_STORE_PENDING_MAX = 5
    channels(store, 2)
    # when: three events in one transaction, then one in another
    with caplog.at_level(logging.WARNING, logger="webhooks.deliveries.services"):
        with transaction.atomic():
            first = [record_order_completed(store, order_id=n) for n in (1, 2)]
            third = record_order_completed(store, order_id=3)
        fourth = record_order_completed(store, order_id=4)
    # then: the first two have their deliveries; the others none, and the log says why
    for event in first:
        assert WebhookDelivery.objects.filter(event=event).count() == 2
    assert not WebhookDelivery.objects.filter(event__in=[third, fourth]).exists()
    assert WebhookDelivery.objects.filter(store=store, status="pending").count() == 4
    withheld = [r for r in caplog.records if "pending deliveries" in r.getMessage()]
    assert [r.event_id for r in withheld] == [third.pk, fourth.pk]


@pytest.mark.django_db(transaction=True)
def test_a_batch_of_events_queues_one_drain_per_channel():
    # given: three channels, and a batch of events in one transaction
    app.control.purge()
    store = StoreFactory()
    made = channels(store, 3)
    # when
    with transaction.atomic():
        for n in range(5):
            record_order_completed(store, order_id=n)
    # then
    try:
        drains = sorted(queued())
        assert drains == [("webhooks.channel_drain", [c.pk]) for c in made]
    finally:
        app.control.purge()
