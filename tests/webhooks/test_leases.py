"""A sending call keeps its leases while it lives, and nothing of it outlives it
(webhooks/dispatch/leases.py): its send slots, its claimed delivery and its drain's marker are
renewed past their length while the send hangs, and once the call returns its renewal thread
is gone. (That a killed worker's leases lapse within seconds is
tests/webhooks/test_worker_takeover.py's.)

Drains run in the test process on real threads against the real PostgreSQL, Redis and a real
local receiver, with a short heartbeat so a lease lasts a fraction of a second.
"""

import threading
import time

import pytest
from django.core.cache import cache
from django.db.models.functions import Now

from config.celery import app
from tests.concurrency import run_at_once
from tests.servers import wait_for
from tests.webhooks.helpers import HeldReceiver, channel_for, record_order_completed
from webhooks.dispatch.attempts import channel_drain, delivery_claim
from webhooks.dispatch.leases import live_seconds
from webhooks.models import WebhookDelivery, WebhookSendSlot


@pytest.fixture(autouse=True)
def short_leases(settings):
    # A lease lasts 1.2 s unless renewed (the cache counts a marker's in whole seconds: 1).
    settings.WEBHOOKS_HEARTBEAT_SECONDS = 0.4
    settings.WEBHOOKS_TIMEOUT_SECONDS = 5
    yield
    app.control.purge()  # the drains the events queued: nothing consumes them here


def lease_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "webhooks-leases"]


@pytest.mark.django_db(transaction=True)
def test_a_live_drain_keeps_its_slots_delivery_and_marker_past_a_lease_length(store, receiver):
    # given a drain whose send hangs at the receiver
    channel = channel_for(store, receiver.url)
    held = HeldReceiver(receiver)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    outcome = {}
    drain = threading.Thread(
        target=lambda: outcome.update(
            claimed=run_at_once(lambda: channel_drain(channel_id=channel.pk), 1)
        )
    )
    drain.start()
    wait_for(lambda: held.in_flight == 1, timeout=10, what="the send in flight")

    # when it hangs for more than two lease lengths
    time.sleep(2 * live_seconds())

    # then its slots (the channel's and the account's), its delivery and its drain's
    # marker are still its own: no other worker could take them over
    live_slots = WebhookSendSlot.objects.filter(lease_until__gte=Now())
    assert live_slots.count() == 2
    delivery.refresh_from_db()
    assert delivery.lease_token is not None
    assert delivery_claim(delivery_id=delivery.pk) is None
    assert cache.get(f"webhooks:drain:{channel.pk}") is not None
    assert held.most_in_flight == 1

    held.release.set()
    drain.join(timeout=30)
    assert outcome["claimed"] == [1]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("succeeded", 1)


@pytest.mark.django_db(transaction=True)
def test_nothing_of_a_drain_renews_after_it_returns(store, receiver):
    # given a drain that held its leases across renewals
    channel = channel_for(store, receiver.url)
    held = HeldReceiver(receiver)
    record_order_completed(store)
    drain = threading.Thread(
        target=lambda: run_at_once(lambda: channel_drain(channel_id=channel.pk), 1)
    )
    drain.start()
    wait_for(lambda: held.in_flight == 1, timeout=10, what="the send in flight")
    time.sleep(live_seconds())
    assert len(lease_threads()) == 1

    # when it returns
    held.release.set()
    drain.join(timeout=30)

    # then its renewal thread has ended with it (its database connection closed by itself)
    assert lease_threads() == []
    assert not WebhookSendSlot.objects.filter(lease_until__gte=Now()).exists()
