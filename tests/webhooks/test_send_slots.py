"""Send slots beyond the channel's: per account (the user who created the stores), and the
failing channels' share of all accounts together; their leases; TCP keepalives.

Drains and sends run in the test process on real threads against the real PostgreSQL and
real local receivers; the queue is the real Redis broker, read without consuming it.
"""

import socket
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from config.celery import app
from tests.concurrency import run_at_once
from tests.factories import StoreFactory, UserFactory
from tests.servers import wait_for
from tests.webhooks.helpers import (
    HeldReceiver,
    Receiver,
    channel_for,
    queued,
    record_order_completed,
)
from webhooks.dispatch.attempts import channel_drain, delivery_send
from webhooks.models import WebhookChannel, WebhookDelivery, WebhookSendSlot

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def bounds(settings):
    settings.WEBHOOKS_RETRY_SCHEDULE_SECONDS = (0, 0, 0)
    settings.WEBHOOKS_TIMEOUT_SECONDS = 5
    settings.WEBHOOKS_CHANNEL_CONCURRENCY = 2
    settings.WEBHOOKS_ACCOUNT_CONCURRENCY = 3
    settings.WEBHOOKS_FAILING_CONCURRENCY = 2
    app.control.purge()
    yield
    app.control.purge()


@pytest.fixture
def receivers():
    servers = []

    def make():
        servers.append(Receiver())
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def stores_of(account, count):
    return [StoreFactory(created_by=account) for _ in range(count)]


def held_sends(channels, receiver, deliveries_each=2):
    """Due deliveries for each channel (all pointing at `receiver`, which holds every
    request), and a thread running two drains per channel, all at once."""
    held = HeldReceiver(receiver)
    for channel in channels:
        for order_id in range(deliveries_each):
            record_order_completed(channel.store, order_id=order_id)
    app.control.purge()
    targets = iter([d.pk for d in channels for _ in range(2)])
    lock = threading.Lock()

    def drain_next():
        with lock:
            channel_id = next(targets)
        return channel_drain(channel_id=channel_id)

    outcome = {}

    def drains():
        outcome["counts"] = run_at_once(drain_next, 2 * len(channels))

    runner = threading.Thread(target=drains)
    runner.start()
    return held, runner, outcome


def run_queued_drains(rounds=20) -> None:
    """Runs the drains waiting in the queue, as a worker would, until none is left: what the
    slot holders' wake-ups queued, and what those drains queue in turn (no sweeper)."""
    for _ in range(rounds):
        drains = [args[0] for name, args in queued() if name == "webhooks.channel_drain"]
        app.control.purge()
        if not drains:
            return
        for channel_id in drains:
            channel_drain(channel_id=channel_id)
    raise AssertionError("drains still queued after 20 rounds")


def live_slots(scope) -> int:
    return WebhookSendSlot.objects.filter(scope=scope, lease_until__gte=timezone.now()).count()


def test_an_accounts_stores_together_have_at_most_its_concurrency_in_flight(receivers):
    # given one user's four stores, whose receiver holds every request
    account, other_account = UserFactory(), UserFactory()
    hanging = receivers()
    channels = [channel_for(store, hanging.url) for store in stores_of(account, 4)]
    held, runner, outcome = held_sends(channels, hanging)

    # when their drains run at once: the account's three slots are taken, no more
    wait_for(lambda: held.in_flight == 3, timeout=10, what="three sends in flight")
    threading.Event().wait(0.5)  # time for a fourth send, were one let through
    assert held.in_flight == 3
    assert live_slots(WebhookSendSlot.SCOPE_ACCOUNT) == 3

    # then another user's store is sent to meanwhile
    theirs = receivers()
    their_channel = channel_for(StoreFactory(created_by=other_account), theirs.url)
    record_order_completed(their_channel.store)
    assert run_at_once(lambda: channel_drain(channel_id=their_channel.pk), 1) == [1]
    assert len(theirs.received()) == 1

    # and once the held sends end, the slot holders' wake-ups get every waiting store sent
    app.control.purge()
    held.release.set()
    runner.join(timeout=30)
    assert not [c for c in outcome["counts"] if isinstance(c, BaseException)], outcome
    assert sorted(outcome["counts"])[:5] == [0] * 5  # refused at once, deliveries left waiting
    assert WebhookDelivery.objects.filter(status="pending").exists()
    run_queued_drains()
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"succeeded"}
    assert held.most_in_flight == 3
    assert live_slots(WebhookSendSlot.SCOPE_ACCOUNT) == 0
    assert live_slots(WebhookSendSlot.SCOPE_CHANNEL) == 0


def test_failing_channels_of_all_accounts_share_a_few_slots(receivers):
    # given three users' stores whose channels are failing, one receiver holding them all
    hanging = receivers()
    channels = [channel_for(StoreFactory(created_by=UserFactory()), hanging.url) for _ in range(3)]
    WebhookChannel.objects.update(failing_since=timezone.now() - timedelta(minutes=5))
    held, runner, outcome = held_sends(channels, hanging)

    # when their drains run at once: the failing share's two slots are taken, no more
    wait_for(lambda: held.in_flight == 2, timeout=10, what="two sends in flight")
    threading.Event().wait(0.5)
    assert held.in_flight == 2
    assert live_slots(WebhookSendSlot.SCOPE_FAILING) == 2

    # then a healthy channel is sent to meanwhile
    healthy = receivers()
    channel = channel_for(StoreFactory(created_by=UserFactory()), healthy.url)
    record_order_completed(channel.store)
    assert run_at_once(lambda: channel_drain(channel_id=channel.pk), 1) == [1]
    assert len(healthy.received()) == 1

    # and once the held sends end, the slot holders' wake-ups get every failing store sent
    app.control.purge()
    held.release.set()
    runner.join(timeout=30)
    assert not [c for c in outcome["counts"] if isinstance(c, BaseException)], outcome
    assert sorted(outcome["counts"])[:4] == [0] * 4
    assert WebhookDelivery.objects.filter(status="pending").exists()
    run_queued_drains()
    assert set(
        WebhookDelivery.objects.exclude(channel=channel).values_list("status", flat=True)
    ) == {"succeeded"}
    assert held.most_in_flight == 2
    assert live_slots(WebhookSendSlot.SCOPE_FAILING) == 0


def test_a_send_refused_by_one_bound_holds_no_slot_of_the_others(receivers, settings):
    # given an account whose only slot is held by a send to its first store
    settings.WEBHOOKS_ACCOUNT_CONCURRENCY = 1
    account = UserFactory()
    hanging = receivers()
    first, second = (channel_for(store, hanging.url) for store in stores_of(account, 2))
    held = HeldReceiver(hanging)
    sending = WebhookDelivery.objects.get(event=record_order_completed(first.store))
    waiting = WebhookDelivery.objects.get(event=record_order_completed(second.store))
    sender = threading.Thread(
        target=lambda: run_at_once(lambda: delivery_send(delivery_id=sending.pk), 1)
    )
    sender.start()
    wait_for(lambda: held.in_flight == 1, timeout=10, what="the first send in flight")

    # when a send to the second store is refused (the account is full)
    assert run_at_once(lambda: delivery_send(delivery_id=waiting.pk), 1) == [None]

    # then it took none of its channel's slots either
    assert not WebhookSendSlot.objects.filter(
        scope=WebhookSendSlot.SCOPE_CHANNEL, owner=second.pk, lease_until__gte=timezone.now()
    ).exists()
    held.release.set()
    sender.join(timeout=30)


def test_a_store_whose_creator_is_gone_counts_as_its_own_account(receiver):
    # given a store whose creating user was deleted
    account = UserFactory()
    store = StoreFactory(created_by=account)
    channel = channel_for(store, receiver.url)
    account.delete()
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    # then its deliveries are still sent
    assert run_at_once(lambda: delivery_send(delivery_id=delivery.pk), 1) == ["succeeded"]
    assert WebhookSendSlot.objects.filter(
        scope=WebhookSendSlot.SCOPE_ACCOUNT, owner=-channel.store_id
    ).exists()


def test_database_connections_probe_a_silent_peer_within_minutes():
    # Linux's defaults (7200 s idle, 9 probes 75 s apart) keep a connection to a vanished host,
    # and everything its process holds, for 2 h 11 min.
    connection.ensure_connection()
    raw = socket.socket(fileno=connection.connection.fileno())
    try:
        assert raw.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        idle = raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE)
        interval = raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL)
        probes = raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT)
        user_timeout_ms = raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT)
    finally:
        raw.detach()  # the socket stays psycopg's
    assert idle + interval * probes <= 180
    assert 0 < user_timeout_ms <= 180_000


def test_a_deleted_channel_leaves_no_send_slots(store, receiver):
    from webhooks.channels.destination import destination_delete

    channel = channel_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    assert run_at_once(lambda: delivery_send(delivery_id=delivery.pk), 1) == ["succeeded"]
    assert WebhookSendSlot.objects.filter(
        scope=WebhookSendSlot.SCOPE_CHANNEL, owner=channel.pk
    ).exists()

    destination_delete(store=store)

    assert not WebhookSendSlot.objects.filter(
        scope=WebhookSendSlot.SCOPE_CHANNEL, owner=channel.pk
    ).exists()
