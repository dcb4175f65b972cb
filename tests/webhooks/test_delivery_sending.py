"""One attempt at a time, run in the test process against a real local receiver."""

import json
import socket
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from standardwebhooks import Webhook

from config.celery import app
from events.serializers import event_resource
from tests.concurrency import run_at_once
from tests.factories import StoreFactory
from tests.webhooks.helpers import (
    Reply,
    channel_for,
    queued,
    record_order_completed,
    store_secret,
)
from webhooks.channels.services import signing_secret_rotate
from webhooks.dispatch.attempts import delivery_claim, delivery_send
from webhooks.dispatch.queueing import channel_drain_marker_clear, deliveries_sweep
from webhooks.models import (
    WebhookChannel,
    WebhookDelivery,
    WebhookDeliveryAttempt,
    WebhookSigningSecret,
)

pytestmark = pytest.mark.usefixtures("quick_schedule")


def send_now(delivery):
    return delivery_send(delivery_id=delivery.pk)


def test_record_creates_a_pending_delivery_for_a_subscribed_type(store, receiver):
    channel_for(store, receiver.url, event_types=["order.completed"])

    event = record_order_completed(store)

    delivery = WebhookDelivery.objects.get(event=event)
    assert delivery.status == "pending"
    assert delivery.attempts == 0
    assert delivery.response_status is None
    assert delivery.destination_origin == receiver.url.removesuffix("/hooks")
    assert delivery.next_attempt_at is not None


def test_no_delivery_for_unsubscribed_types_or_without_channel(store, other_store, receiver):
    channel_for(store, receiver.url, event_types=["coupon.created"])

    record_order_completed(store)
    record_order_completed(other_store)

    assert not WebhookDelivery.objects.exists()


def test_disabled_destination_gets_no_delivery(store, receiver):
    # Recover sends it what it missed once it is enabled again.
    channel_for(store, receiver.url, enabled=False)

    event = record_order_completed(store)

    assert not WebhookDelivery.objects.filter(event=event).exists()
    assert receiver.received() == []


def test_a_delivery_whose_channel_was_disabled_since_is_never_sent(store, receiver):
    channel = channel_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    WebhookChannel.objects.filter(pk=channel.pk).update(enabled=False)

    outcome = send_now(delivery)

    assert outcome is None
    delivery.refresh_from_db()
    assert delivery.status == "disabled"
    assert delivery.attempts == 0
    assert receiver.received() == []


def test_success_sends_a_signed_standard_webhook(store, receiver):
    channel = channel_for(store, receiver.url)
    event = record_order_completed(store)
    delivery = WebhookDelivery.objects.get(event=event)

    outcome = send_now(delivery)

    assert outcome == "succeeded"
    (request,) = receiver.received()
    assert request.method == "POST"
    assert request.headers["webhook-id"] == event.id
    assert request.headers["User-Agent"] == "Storefront-Webhooks/1.0"
    assert request.headers["Content-Type"] == "application/json"
    # The receiver's verification, with the Standard Webhooks library.
    payload = Webhook(store_secret(channel.store)).verify(request.body, request.headers)
    assert payload == {**json.loads(json.dumps(event_resource(event))), "test": False}
    assert payload["data"] == {"total_cents": 1250, "currency": "EUR"}
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("succeeded", 1, 200)
    assert delivery.response_body == '{"ok": true}'
    assert delivery.next_attempt_at is None
    attempt = WebhookDeliveryAttempt.objects.get(delivery=delivery)
    assert attempt.response_status == 200 and attempt.duration_ms is not None
    assert attempt.finished_at is not None and attempt.error == ""


def test_without_a_signing_secret_nothing_is_sent_and_the_attempt_says_why(store, receiver):
    # given: a channel of a store whose signing secret was never set (as the SDK creates one)
    channel_for(store, receiver.url)
    WebhookSigningSecret.objects.filter(store=store).delete()
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    # when
    outcome = send_now(delivery)

    # then: no unsigned request left; a failed attempt the schedule retries
    assert receiver.received() == []
    assert outcome == "pending"
    attempt = WebhookDeliveryAttempt.objects.get(delivery=delivery)
    assert "no signing secret" in attempt.error
    # once the secret is set, the retry goes out signed
    signing_secret_rotate(store=store)
    assert send_now(delivery) == "succeeded"
    (request,) = receiver.received()
    Webhook(store_secret(store)).verify(request.body, request.headers)


def test_a_tampered_body_fails_verification(store, receiver):
    from standardwebhooks.webhooks import WebhookVerificationError

    channel = channel_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    send_now(delivery)
    (request,) = receiver.received()

    with pytest.raises(WebhookVerificationError):
        Webhook(store_secret(channel.store)).verify(
            request.body.replace(b"1250", b"9999"), request.headers
        )


def test_after_rotation_both_secrets_verify(store, receiver):
    old = store_secret(channel_for(store, receiver.url).store)
    new = signing_secret_rotate(store=store).secret
    send_now(WebhookDelivery.objects.get(event=record_order_completed(store)))

    (request,) = receiver.received()
    assert len(request.headers["webhook-signature"].split(" ")) == 2
    Webhook(old).verify(request.body, request.headers)
    Webhook(new).verify(request.body, request.headers)


def test_retry_then_success(store, receiver):
    channel_for(store, receiver.url)
    replies = iter([Reply(500, b"boom"), Reply(200, b"ok")])
    receiver.respond = lambda request: next(replies)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    assert send_now(delivery) == "pending"
    delivery.refresh_from_db()
    assert (delivery.attempts, delivery.response_status, delivery.response_body) == (1, 500, "boom")
    assert send_now(delivery) == "succeeded"

    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("succeeded", 2, 200)
    attempts = list(delivery.attempt_records.values_list("number", "response_status", "error"))
    assert attempts == [(1, 500, "HTTP 500"), (2, 200, "")]
    # The same event id each time, so receivers can deduplicate.
    assert len({r.headers["webhook-id"] for r in receiver.received()}) == 1


def test_retries_exhausted_is_failed(store, receiver):
    channel_for(store, receiver.url)
    receiver.respond = lambda request: Reply(503, b"down")
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    outcomes = [send_now(delivery) for _ in range(5)]

    assert outcomes == ["pending", "pending", "pending", "failed", None]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("failed", 4, 503)
    assert delivery.next_attempt_at is None
    assert len(receiver.received()) == 4


def test_retry_waits_follow_the_schedule(store, receiver, settings):
    settings.WEBHOOKS_RETRY_SCHEDULE_SECONDS = (5, 300)
    channel_for(store, receiver.url)
    receiver.respond = lambda request: Reply(500)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    before = timezone.now()
    send_now(delivery)
    delivery.refresh_from_db()

    wait = (delivery.next_attempt_at - before).total_seconds()
    assert 4 <= wait <= 7
    # Not due yet: a second message or sweep does nothing.
    assert send_now(delivery) is None
    assert len(receiver.received()) == 1


@pytest.mark.parametrize(
    ("status", "retry_after", "expected_wait"),
    [
        (429, "120", 120),  # longer than the schedule's 5 s: honoured
        (503, "120", 120),
        (503, "2", 5),  # shorter: the schedule wins
        (500, "120", 5),  # only 429 and 503 ask for a wait
        (408, "120", 5),
    ],
)
def test_retry_after_is_honoured_only_when_longer_on_429_and_503(
    store, receiver, settings, status, retry_after, expected_wait
):
    settings.WEBHOOKS_RETRY_SCHEDULE_SECONDS = (5, 300, 1800)
    channel_for(store, receiver.url)
    receiver.respond = lambda request: Reply(status, headers={"Retry-After": retry_after})
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    before = timezone.now()
    send_now(delivery)
    delivery.refresh_from_db()

    wait = (delivery.next_attempt_at - before).total_seconds()
    assert expected_wait - 2 <= wait <= expected_wait + 2, wait


@pytest.mark.parametrize("retry_after", ["999999", "330"])
def test_a_retry_after_past_the_schedules_longest_wait_is_capped_at_it(
    store, receiver, settings, retry_after
):
    # given a schedule whose longest wait is 300 s, and a receiver asking for far longer
    settings.WEBHOOKS_RETRY_SCHEDULE_SECONDS = (5, 300)
    channel_for(store, receiver.url)
    receiver.respond = lambda request: Reply(503, headers={"Retry-After": retry_after})
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    # when the first attempt fails
    before = timezone.now()
    send_now(delivery)
    delivery.refresh_from_db()

    # then the next attempt is the schedule's longest wait away, not the receiver's
    assert delivery.status == WebhookDelivery.STATUS_PENDING
    wait = (delivery.next_attempt_at - before).total_seconds()
    assert 298 <= wait <= 302, wait


def test_network_error_is_retried(store, settings):
    # a port nobody listens on
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    channel_for(store, f"http://127.0.0.1:{port}/hooks")
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    assert send_now(delivery) == "pending"

    delivery.refresh_from_db()
    assert delivery.response_status is None
    assert "connection" in delivery.attempt_records.get().error


def test_the_attempt_log_line_names_the_error_kind_never_the_channel_path(store, settings, caplog):
    # a channel path that is a credential, on a port nobody listens on
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    channel_for(store, f"http://127.0.0.1:{port}/services/T0SECRETPATH")
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    with caplog.at_level("INFO", logger="webhooks.dispatch.attempts"):
        assert send_now(delivery) == "pending"

    # the attempt record keeps the kind and the origin, never the path
    error = WebhookDeliveryAttempt.objects.get().error
    assert error == f"connection refused: http://127.0.0.1:{port}"
    [line] = [r for r in caplog.records if r.name == "webhooks.dispatch.attempts"]
    assert line.delivery_id == str(delivery.pk)
    assert line.error_kind == "connection refused"
    assert "T0SECRETPATH" not in line.getMessage()


def test_timeout_is_a_failed_attempt(store, receiver):
    channel_for(store, receiver.url)
    receiver.respond = lambda request: Reply(200, delay=2.5)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    assert send_now(delivery) == "pending"

    delivery.refresh_from_db()
    attempt = delivery.attempt_records.get()
    assert delivery.response_status is None and delivery.status == "pending"
    assert "timeout" in attempt.error.lower() or "timed out" in attempt.error.lower()
    assert attempt.duration_ms < 2400


def test_redirect_is_not_followed(store, receiver):
    channel_for(store, receiver.url)
    receiver.respond = lambda request: Reply(
        302, headers={"Location": receiver.url.replace("/hooks", "/elsewhere")}
    )
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    assert send_now(delivery) == "pending"

    assert [r.path for r in receiver.received()] == ["/hooks"]
    delivery.refresh_from_db()
    assert delivery.response_status == 302


def test_response_body_is_truncated_to_1_kib(store, receiver):
    channel_for(store, receiver.url)
    receiver.respond = lambda request: Reply(500, b"x" * 5000)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    send_now(delivery)

    delivery.refresh_from_db()
    assert delivery.response_body == "x" * 1024
    assert delivery.attempt_records.get().response_body == "x" * 1024


def test_410_gone_disables_the_channel(store, receiver):
    channel = channel_for(store, receiver.url)
    receiver.respond = lambda request: Reply(410, b"gone")
    first = WebhookDelivery.objects.get(event=record_order_completed(store, order_id=1))
    second = WebhookDelivery.objects.get(event=record_order_completed(store, order_id=2))

    assert send_now(first) == "failed"

    channel.refresh_from_db()
    assert channel.enabled is False and channel.disabled_reason == "gone"
    second.refresh_from_db()
    assert second.status == "disabled" and second.attempts == 0
    # later events get no delivery while it is off (recover sends them once it is enabled)
    assert not WebhookDelivery.objects.filter(event=record_order_completed(store, order_id=3))


def test_failing_every_attempt_for_five_days_disables_the_channel(store, receiver):
    channel = channel_for(store, receiver.url)
    receiver.respond = lambda request: Reply(500)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    send_now(delivery)
    channel.refresh_from_db()
    assert channel.enabled and channel.failing_since is not None
    WebhookChannel.objects.filter(pk=channel.pk).update(
        failing_since=timezone.now() - timedelta(days=5, minutes=1)
    )
    send_now(delivery)

    channel.refresh_from_db()
    assert channel.enabled is False and channel.disabled_reason == "failing"


def test_a_success_resets_the_failing_clock(store, receiver):
    channel = channel_for(store, receiver.url)
    replies = iter([Reply(500), Reply(200)])
    receiver.respond = lambda request: next(replies)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    send_now(delivery)
    send_now(delivery)

    channel.refresh_from_db()
    assert channel.failing_since is None and channel.enabled


def test_send_time_check_refuses_loopback_without_the_dev_flag(store, receiver, settings):
    # given a channel saved while private channels were allowed
    channel_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    settings.WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS = False

    # when
    outcome = send_now(delivery)

    # then nothing reached the address
    assert outcome == "pending"
    assert receiver.received() == []
    assert "loopback" in delivery.attempt_records.get().error


def test_send_time_check_uses_the_address_connected_to(store, receiver, settings, monkeypatch):
    """DNS rebinding: the name resolved to a public address at save time and to a private
    one at send time; the connection is refused."""
    real = socket.getaddrinfo
    answer = {"address": "93.184.216.34"}

    def getaddrinfo(host, port, *args, **kwargs):
        if host == "rebind.example.com":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answer["address"], port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    settings.WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS = False
    channel_for(store, "https://rebind.example.com/hooks")
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    answer["address"] = "10.20.30.40"

    assert send_now(delivery) == "pending"

    error = delivery.attempt_records.get().error
    assert "private-use" in error and "10.20.30.40" not in error


def test_send_time_check_refuses_metadata_even_with_the_dev_flag(store, monkeypatch):
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host == "meta.example.com":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("169.254.169.254", port))]
        return real(host, port, *args, **kwargs)

    channel_for(store, "http://meta.example.com/hooks")
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    send_now(delivery)

    assert "metadata" in delivery.attempt_records.get().error


@pytest.mark.django_db(transaction=True)
def test_concurrent_claims_give_an_attempt_to_one_worker_only(store, receiver):
    channel_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    claims = run_at_once(lambda: delivery_claim(delivery_id=delivery.pk), 8)

    # a raised exception is not a claim, and must not pass for one below
    assert not [claim for claim in claims if isinstance(claim, BaseException)], claims
    assert sum(claim is not None for claim in claims) == 1
    delivery.refresh_from_db()
    assert delivery.attempts == 1


def test_an_expired_lease_can_be_taken_over_and_the_lost_attempt_is_recorded(store, receiver):
    channel_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    assert delivery_claim(delivery_id=delivery.pk) is not None  # a worker that then dies
    assert delivery_claim(delivery_id=delivery.pk) is None  # lease still held

    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        lease_until=timezone.now() - timedelta(seconds=1)
    )
    assert send_now(delivery) == "succeeded"

    delivery.refresh_from_db()
    assert delivery.attempts == 2
    first, second = delivery.attempt_records.all()
    assert first.error.startswith("abandoned") and first.response_status is None
    assert second.response_status == 200


def test_sweeper_queues_due_deliveries_whose_message_may_be_lost(
    store, other_store, receiver, settings, django_capture_on_commit_callbacks
):
    settings.WEBHOOKS_REQUEUE_AFTER_SECONDS = 60
    # given deliveries whose drains were queued on commit (their markers stand)
    channel_for(store, receiver.url)
    other = channel_for(other_store, receiver.url)
    with django_capture_on_commit_callbacks(execute=True):
        record_order_completed(store, order_id=1)
        lost = WebhookDelivery.objects.get(event=record_order_completed(other_store, order_id=2))
        later = WebhookDelivery.objects.get(event=record_order_completed(store, order_id=3))
    app.control.purge()
    # one whose message was lost long ago, one not due yet
    long_ago = timezone.now() - timedelta(minutes=5)
    WebhookDelivery.objects.filter(pk=lost.pk).update(enqueued_at=long_ago)
    WebhookDelivery.objects.filter(pk=later.pk).update(
        enqueued_at=None, next_attempt_at=timezone.now() + timedelta(minutes=5)
    )

    # only `lost`'s channel is drained: the other's drain was just queued
    assert deliveries_sweep() == 1
    assert queued() == [("webhooks.channel_drain", [other.pk])]
    lost.refresh_from_db()
    assert lost.enqueued_at > long_ago
    assert deliveries_sweep() == 0


def test_sweeper_queues_at_once_what_a_drain_that_died_left(
    store, receiver, django_capture_on_commit_callbacks
):
    # given deliveries just queued, whose drain's marker then ran out (its worker died)
    channel = channel_for(store, receiver.url)
    with django_capture_on_commit_callbacks(execute=True):
        record_order_completed(store, order_id=1)
        record_order_completed(store, order_id=2)
    app.control.purge()
    assert deliveries_sweep() == 0  # a drain is queued: nothing to do
    channel_drain_marker_clear(channel.pk)

    # when the sweeper runs, long before WEBHOOKS_REQUEUE_AFTER_SECONDS
    swept = deliveries_sweep()

    # then it queues a drain of the channel
    assert swept == 2
    assert queued() == [("webhooks.channel_drain", [channel.pk])]


def test_an_outcome_is_not_recorded_by_a_worker_that_lost_its_lease(store, receiver):
    from webhooks.dispatch.attempts import delivery_attempt_finish
    from webhooks.dispatch.sender import SendResult

    channel_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    claimed, attempt = delivery_claim(delivery_id=delivery.pk)
    # another worker took the delivery over after the lease ran out
    WebhookDelivery.objects.filter(pk=delivery.pk).update(lease_token=uuid.uuid4())

    status = delivery_attempt_finish(
        delivery=claimed, attempt=attempt, result=SendResult(200, "ok", "", 5)
    )

    assert status == "pending"
    delivery.refresh_from_db()
    assert delivery.status == "pending" and delivery.response_status is None
    assert not delivery.attempt_records.exists()


def test_sweeper_catches_up_in_batches_of_channels(store, receiver, settings):
    settings.WEBHOOKS_SWEEP_BATCH_SIZE = 2
    settings.WEBHOOKS_SWEEP_MAX_BATCHES = 2
    for each in [store, *StoreFactory.create_batch(4)]:
        channel_for(each, receiver.url)
        record_order_completed(each)
    WebhookDelivery.objects.update(enqueued_at=None)

    assert deliveries_sweep() == 4  # two batches of two channels in one run
    assert deliveries_sweep() == 1
    assert deliveries_sweep() == 0


def test_delivery_is_queued_on_commit_and_not_at_all_on_rollback(
    store, receiver, django_capture_on_commit_callbacks
):
    from django.db import transaction

    from events.services import record

    channel_for(store, receiver.url)

    # a business transaction that fails after recording its event
    with pytest.raises(RuntimeError), transaction.atomic():
        record(store=store, type="coupon.created", subject=("coupon", 1))
        raise RuntimeError("the business change failed")
    assert not WebhookDelivery.objects.exists()

    # one that commits: exactly one send task is queued, after the commit
    with django_capture_on_commit_callbacks() as callbacks:
        event = record_order_completed(store)
    assert len(callbacks) == 1
    assert WebhookDelivery.objects.filter(event=event, status="pending").count() == 1


def test_a_channel_disabled_during_an_attempt_fails_the_delivery_instead_of_retrying(
    store, receiver
):
    from webhooks.dispatch.attempts import delivery_attempt_finish
    from webhooks.dispatch.failures import channel_enabled_set
    from webhooks.dispatch.sender import SendResult

    channel = channel_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    claimed, attempt = delivery_claim(delivery_id=delivery.pk)
    # disabled while the attempt is in flight: the attempt's outcome settles the delivery
    channel_enabled_set(channel=channel, enabled=False)

    status = delivery_attempt_finish(
        delivery=claimed, attempt=attempt, result=SendResult(500, "boom", "HTTP 500", 5)
    )

    assert status == "failed"
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("failed", 1, 500)
    assert delivery.next_attempt_at is None and delivery.lease_token is None
    assert delivery.attempt_records.get().error == "HTTP 500"


@pytest.mark.parametrize("change", ["disable", "delete"])
def test_a_dead_workers_delivery_to_a_disabled_or_deleted_channel_ends_failed(
    store, receiver, change
):
    from webhooks.channels.destination import destination_delete
    from webhooks.dispatch.failures import channel_enabled_set

    channel = channel_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    assert delivery_claim(delivery_id=delivery.pk) is not None  # a worker that then dies
    # settles the channel's waiting deliveries, but leaves the leased one to its next claim
    if change == "disable":
        channel_enabled_set(channel=channel, enabled=False)
    else:
        destination_delete(store=store)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        lease_until=timezone.now() - timedelta(seconds=1)
    )

    assert send_now(delivery) is None

    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == ("failed", 1, None)
    assert delivery.attempt_records.get().error.startswith("abandoned")
    assert receiver.received() == []
