"""Whatever a receiver answers is an attempt on the schedule: a hostile receiver (a raw socket
server) answers each delivery attempt with a different malformed response, a clock the test
moves on stands in for time, and every send is checked against the retry schedule."""

import itertools
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.factories import TEST_SIGNING_SECRET
from tests.webhooks.helpers import (
    FLOOD_BYTES,
    HostileReceiver,
    RawAnswer,
    channel_for,
    record_order_completed,
)
from webhooks.dispatch.attempts import delivery_claim, delivery_send
from webhooks.dispatch.failures import retry_delay
from webhooks.dispatch.leases import live_seconds
from webhooks.dispatch.sender import SendResult, _retry_after, send
from webhooks.models import WebhookDelivery

# Answers a receiver can give that are no 2xx: each must end as a failed attempt.
FAILING = [
    # '²' is a digit to str.isdigit, not to float()
    RawAnswer(
        "retry-after ²", b"HTTP/1.1 503 Busy\r\nRetry-After: \xb2\r\nContent-Length: 0\r\n\r\n"
    ),
    RawAnswer("nul body", b"HTTP/1.1 500 Oops\r\nContent-Length: 9\r\n\r\nx\x00y\xff\xfe\xc3(z!"),
    RawAnswer("garbage status line", b"\xff\xfeHTTP/9.9 two hundred\r\n\r\n"),
    RawAnswer("http/0.9", b"ok\n"),
    RawAnswer(
        "header bytes",
        b"HTTP/1.1 500 \x00\xff\r\nX-Bad\x00: \x00\xff\xfe\r\n\xff: y\r\nContent-Length: 0\r\n\r\n",
    ),
    RawAnswer(
        "reset after head", b"HTTP/1.1 502 Bad\r\nContent-Length: 100\r\n\r\npartial", "reset"
    ),
    RawAnswer("trickle", b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 200, "trickle"),
    RawAnswer(
        "absurd lengths",
        b"HTTP/1.1 503 Busy\r\nContent-Length: 99999999999999999999999999\r\n"
        b"Retry-After: " + b"9" * 5000 + b"\r\n\r\nshort",
    ),
    RawAnswer("1xx only", b"HTTP/1.1 100 Continue\r\n\r\n"),
    RawAnswer("early hints only", b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"),
    RawAnswer(
        "redirect to a broken location",
        b"HTTP/1.1 302 Found\r\nLocation: http://[\xff\r\nContent-Length: 0\r\n\r\n",
    ),
    RawAnswer(
        "retry-after past year 9999",
        b"HTTP/1.1 429 Slow\r\nRetry-After: Mon, 01 Jan 99999 00:00:00 GMT\r\n"
        b"Content-Length: 0\r\n\r\n",
    ),
    RawAnswer("bad chunk", b"HTTP/1.1 500 X\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
    RawAnswer(
        "gzip that is not",
        b"HTTP/1.1 500 X\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nnope",
    ),
    RawAnswer(
        "too many headers",
        b"HTTP/1.1 500 X\r\n" + b"X-H: h\r\n" * 150 + b"Content-Length: 0\r\n\r\n",
    ),
    RawAnswer("nothing", b""),
    RawAnswer("status 999", b"HTTP/1.1 999 Whatever\r\nContent-Length: 0\r\n\r\n"),
    RawAnswer("negative length", b"HTTP/1.1 500 X\r\nContent-Length: -5\r\n\r\nabc"),
    RawAnswer(
        "cookie bytes",
        b"HTTP/1.1 500 X\r\nSet-Cookie: \xff=\x00; expires=\xff; domain=..\r\n"
        b"Content-Length: 0\r\n\r\n",
    ),
]

# 2xx answers with something odd about them: each is a success, its body stored as text.
SUCCEEDING = [
    RawAnswer("200 with nul", b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nok\x00ok\xff!"),
    RawAnswer(
        "200 reset after head", b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial", "reset"
    ),
    RawAnswer(
        "204 with header bytes",
        b"HTTP/1.1 204 \xff\x00\r\nX-Bad: \x00\xff\r\nRetry-After: \xb2\r\n\r\n",
    ),
    RawAnswer(
        "201 gzip that is not",
        b"HTTP/1.1 201 Created\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nnope",
    ),
]


class Clock:
    """Python's clock (time-machine), stopped and moved on only by the test (the deadline of a
    send, in time.monotonic, still runs in real time)."""

    def __init__(self, traveller):
        self.traveller = traveller

    @property
    def now(self):
        return timezone.now()

    def advance(self, seconds: float) -> None:
        self.traveller.shift(seconds)


@pytest.fixture
def clock(time_machine):
    time_machine.move_to(timezone.now(), tick=False)
    return Clock(time_machine)


@pytest.fixture
def quick_sends(settings):
    settings.WEBHOOKS_TIMEOUT_SECONDS = 0.3  # the trickle's budget


@pytest.fixture
def hostile():
    receivers = []

    def start(answers):
        receivers.append(HostileReceiver(answers))
        return receivers[-1]

    yield start
    for receiver in receivers:
        receiver.close()


def ticks(delivery, clock, *, seconds: float, step: float) -> list[tuple[float, int]]:
    """Offers the delivery a send every `step` s of the test's clock for `seconds`, as the
    sweeper's messages would; returns (when, attempts) for each tick that made an attempt."""
    started, made, attempts = clock.now, [], 0
    while (clock.now - started).total_seconds() <= seconds:
        delivery_send(delivery_id=delivery.pk)
        now_attempts = WebhookDelivery.objects.get(pk=delivery.pk).attempts
        if now_attempts != attempts:
            made.append(((clock.now - started).total_seconds(), now_attempts))
            attempts = now_attempts
        clock.advance(step)
    return made


@pytest.mark.django_db(transaction=True)
def test_every_malformed_answer_is_a_failed_attempt_on_the_schedule(
    store, settings, clock, quick_sends, hostile, caplog
):
    # given a schedule that allows one attempt per malformed answer, and a receiver giving them
    settings.WEBHOOKS_RETRY_SCHEDULE_SECONDS = tuple(1.0 + i % 2 for i in range(len(FAILING) - 1))
    schedule = settings.WEBHOOKS_RETRY_SCHEDULE_SECONDS
    receiver = hostile(FAILING)
    channel_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    # when the delivery is offered a send every half second, for longer than its schedule
    with caplog.at_level("ERROR"):
        made = ticks(delivery, clock, seconds=sum(schedule) + 5, step=0.5)

    # then each answer was one attempt, each after its wait and no later than a tick after the
    # longest one (a Retry-After is honoured up to it), and the delivery failed at the end
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", len(FAILING))
    assert receiver.answered == [answer.name for answer in FAILING]
    records = list(delivery.attempt_records.order_by("number"))
    assert [record.number for record in records] == list(range(1, len(FAILING) + 1))
    assert all(record.error and record.finished_at for record in records), [
        (record.number, record.error) for record in records
    ]
    assert not any(
        record.response_status and 200 <= record.response_status < 300 for record in records
    )
    assert [attempts for _, attempts in made] == list(range(1, len(FAILING) + 1))
    gaps = [later - earlier for (earlier, _), (later, _) in itertools.pairwise(made)]
    for number, (gap, wait) in enumerate(zip(gaps, schedule, strict=True), start=1):
        assert wait <= gap <= max(schedule) + 0.5, (number, FAILING[number - 1].name, gap, wait)
    # no answer needed the guard: each was handled as an answer, not as a crash
    assert [record.getMessage() for record in caplog.records if record.levelname == "ERROR"] == []


@pytest.mark.django_db(transaction=True)
def test_an_odd_2xx_is_a_success_whose_body_is_stored_as_text(
    store, settings, clock, quick_sends, hostile
):
    settings.WEBHOOKS_RETRY_SCHEDULE_SECONDS = (1, 1)
    receiver = hostile(SUCCEEDING)
    channel_for(store, receiver.url)
    deliveries = [
        WebhookDelivery.objects.get(event=record_order_completed(store, order_id=number))
        for number in range(len(SUCCEEDING))
    ]

    outcomes = [delivery_send(delivery_id=delivery.pk) for delivery in deliveries]

    assert outcomes == ["succeeded"] * len(SUCCEEDING)
    assert receiver.answered == [answer.name for answer in SUCCEEDING]
    first = WebhookDelivery.objects.get(pk=deliveries[0].pk)
    assert first.response_body == "ok\ufffdok\ufffd!"
    assert first.attempt_records.get().response_body == "ok\ufffdok\ufffd!"


@pytest.mark.django_db(transaction=True)
def test_a_lapsed_lease_is_an_attempt_on_the_schedule_and_the_last_one_fails_it(
    store, settings, clock, hostile
):
    # given a three-attempt schedule whose waits are longer than a lease
    settings.WEBHOOKS_RETRY_SCHEDULE_SECONDS = (10, 20)
    receiver = hostile([RawAnswer("503", b"HTTP/1.1 503 X\r\nContent-Length: 0\r\n\r\n")])
    channel_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    lapse = live_seconds() + 0.5

    def claim_and_die():
        # without a lease keeper: nobody renews the claim, as after the worker's death
        claimed, _attempt = delivery_claim(delivery_id=delivery.pk)
        return claimed

    # when the worker of each attempt dies, and the delivery is offered a send after each lapse
    first = claim_and_die()
    assert first.next_attempt_at == clock.now + timedelta(seconds=10)
    clock.advance(lapse)
    assert delivery_send(delivery_id=delivery.pk) is None  # lapsed, but not due yet
    clock.advance(10 - lapse)
    second = claim_and_die()  # due: the schedule's first wait after the lost attempt
    assert second.next_attempt_at == clock.now + timedelta(seconds=20)
    clock.advance(lapse)
    assert delivery_send(delivery_id=delivery.pk) is None
    clock.advance(20 - lapse)
    claim_and_die()  # the schedule's last attempt
    clock.advance(lapse)
    settled = delivery_send(delivery_id=delivery.pk)
    clock.advance(3600)
    later = delivery_send(delivery_id=delivery.pk)

    # then each lost attempt is recorded, none more is made, and the delivery is failed
    assert (settled, later) == (None, None)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", 3)
    assert (delivery.next_attempt_at, delivery.lease_token) == (None, None)
    records = list(delivery.attempt_records.order_by("number"))
    assert [record.number for record in records] == [1, 2, 3]
    assert all(record.error.startswith("abandoned") for record in records)
    assert receiver.sends == 0


@pytest.mark.django_db(transaction=True)
def test_a_send_that_raises_is_a_failed_attempt_on_the_schedule(
    store, settings, clock, hostile, monkeypatch, caplog
):
    settings.WEBHOOKS_RETRY_SCHEDULE_SECONDS = (10,)
    receiver = hostile([RawAnswer("200", b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")])
    channel_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    def broken_send(**kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("webhooks.dispatch.attempts.send", broken_send)
    with caplog.at_level("ERROR", logger="webhooks.dispatch.attempts"):
        status = delivery_send(delivery_id=delivery.pk)

    assert status == "pending"
    delivery.refresh_from_db()
    assert delivery.lease_token is None
    assert delivery.next_attempt_at == clock.now + timedelta(seconds=10)
    assert delivery.attempt_records.get().error == "internal error: RuntimeError"
    assert [r.levelname for r in caplog.records if r.levelname == "ERROR"] == ["ERROR"]


@pytest.mark.django_db(transaction=True)
def test_a_record_that_raises_is_recorded_as_a_failed_attempt(
    store, settings, clock, hostile, monkeypatch
):
    from webhooks.dispatch import attempts

    settings.WEBHOOKS_RETRY_SCHEDULE_SECONDS = (10,)
    receiver = hostile([RawAnswer("500", b"HTTP/1.1 500 X\r\nContent-Length: 2\r\n\r\nno")])
    channel_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    calls = []

    def outcome_record_failing_once(**kwargs):
        calls.append(kwargs["outcome"]["response_body"])
        if len(calls) == 1:
            raise ValueError("an odd answer")
        return real_outcome_record(**kwargs)

    real_outcome_record = attempts.outcome_record
    monkeypatch.setattr(attempts, "outcome_record", outcome_record_failing_once)
    status = delivery_send(delivery_id=delivery.pk)

    assert status == "pending" and calls == ["no", None]
    delivery.refresh_from_db()
    assert (delivery.attempts, delivery.lease_token, delivery.response_status) == (1, None, None)
    assert delivery.next_attempt_at == clock.now + timedelta(seconds=10)
    assert delivery.attempt_records.get().error == "internal error: ValueError"


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120),
        (" 120\t", 120),
        ("0120", 120),
        ("\xb2", None),  # '²': str.isdigit says yes, float() raises
        ("\u0663", None),  # an Arabic-Indic three: float() reads it, RFC 9110 does not
        ("1e3", None),
        ("12.5", None),
        ("-5", None),
        ("+5", None),
        ("0x10", None),
        ("120 s", None),
        ("", None),
        (None, None),
        ("Mon, 01 Jan 99999 00:00:00 GMT", None),
        ("Mon, 99 Jan 2026 00:00:00 GMT", None),
        ("1 Jan 2026 00:00 +0100", None),  # RFC 5322, not an HTTP-date
        ("Fri, 31 Dec 9999 23:59:59 GMT", "far"),  # IMF-fixdate
        ("Friday, 31-Dec-99 23:59:59 GMT", "past"),  # rfc850: 1999
        ("Fri Dec 31 23:59:59 9999", "far"),  # asctime
        ("Sun, 06 Nov 1994 08:49:37 GMT", 0),  # past: no wait
    ],
)
def test_retry_after_takes_only_rfc_9110_forms(value, seconds):
    parsed = _retry_after(value)
    if seconds == "far":
        assert parsed > 100 * 365 * 86400
    elif seconds == "past":
        assert parsed == 0
    else:
        assert parsed == seconds


def test_an_absurd_retry_after_waits_the_schedules_longest_wait(settings):
    settings.WEBHOOKS_RETRY_SCHEDULE_SECONDS = (5, 300)
    absurd = SendResult(503, "", "HTTP 503", 1, retry_after_seconds=_retry_after("9" * 5000))

    assert retry_delay(attempts=1, result=absurd) == 300


def test_a_redirect_is_not_read_past_the_body_limit(settings, hostile):
    # given a receiver answering a redirect with an endless body
    settings.WEBHOOKS_TIMEOUT_SECONDS = 5
    head = b"HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: %d\r\n\r\n"
    receiver = hostile([RawAnswer("302 flood", head % FLOOD_BYTES, "flood")])

    # when a delivery is sent to it
    result = send(url=receiver.url, message_id="evt_1", body=b"{}", secrets=[TEST_SIGNING_SECRET])

    # then the answer is a 302 and its body was read no further than the limit (and what the
    # sockets' buffers took)
    assert (result.response_status, result.error) == (302, "HTTP 302")
    assert len(result.response_body) == settings.WEBHOOKS_RESPONSE_BODY_LIMIT
    assert receiver.flooded < FLOOD_BYTES / 4


def test_text_from_a_receiver_is_stored_without_nul_and_as_valid_utf8(store, receiver):
    from webhooks.dispatch.attempts import delivery_attempt_finish

    channel_for(store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    claimed, attempt = delivery_claim(delivery_id=delivery.pk)

    status = delivery_attempt_finish(
        delivery=claimed,
        attempt=attempt,
        result=SendResult(500, "a\x00b\udcffc", "HTTP 500\x00", 5),
    )

    assert status == "pending"
    delivery.refresh_from_db()
    assert delivery.response_body == "a\ufffdb?c"
    stored = delivery.attempt_records.get()
    assert (stored.response_body, stored.error) == ("a\ufffdb?c", "HTTP 500\ufffd")


@pytest.mark.django_db
@pytest.mark.parametrize("answer", FAILING + SUCCEEDING, ids=lambda answer: answer.name)
def test_the_test_send_answers_422_to_every_malformed_answer(
    auth_client, quick_sends, hostile, answer
):
    receiver = hostile([answer])
    url = "/api/v2/webhook-channels"
    auth_client.put(f"{url}/signing-secret", {"signing_secret": TEST_SIGNING_SECRET}, format="json")
    channel = auth_client.post(
        url, {"url": receiver.url, "allowed_notifications": ["order.completed"]}, format="json"
    ).json()["data"]

    response = auth_client.post(
        f"{url}/{channel['id']}/test", {"event": "order.completed"}, format="json"
    )

    if answer in SUCCEEDING:
        assert response.status_code == 200, response.json()
    else:
        assert response.status_code == 422, response.content
        assert response.json()["param"] == "url"
    assert receiver.answered == [answer.name]
