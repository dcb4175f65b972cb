"""One attempt has one time budget (WEBHOOKS_TIMEOUT_SECONDS) for DNS, connect and the whole
answer, so a slow channel cannot outlive the delivery's lease (two workers would then send
the same delivery at once)."""

import socket
import threading
import time

import pytest

from tests.webhooks.helpers import channel_for, record_order_completed
from webhooks.dispatch.attempts import delivery_send
from webhooks.models import WebhookDelivery

BUDGET_SECONDS = 1.0
# Far below the per-read timeout: every single read succeeds, only their sum is too long.
TRICKLE_INTERVAL = 0.2
TRICKLE_FOR_SECONDS = 8.0


class TricklingReceiver:
    """Reads the request, then sends `head` and trickles `tail` one byte at a time."""

    def __init__(self, head: bytes, tail: bytes):
        self.head, self.tail = head, tail
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/hooks"

    def _serve(self):
        self.listener.settimeout(0.1)
        while not self.stopped.is_set():
            try:
                connection, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection):
        with connection:
            connection.settimeout(2)
            try:
                connection.recv(65536)
                connection.sendall(self.head)
                ends_at = time.monotonic() + TRICKLE_FOR_SECONDS
                for byte in self.tail:
                    if self.stopped.is_set() or time.monotonic() > ends_at:
                        return
                    connection.sendall(bytes([byte]))
                    time.sleep(TRICKLE_INTERVAL)
            except OSError:
                return  # the sender cut the connection: what the test expects

    def close(self):
        self.stopped.set()
        self.listener.close()


@pytest.fixture
def budget(settings):
    settings.WEBHOOKS_TIMEOUT_SECONDS = BUDGET_SECONDS
    settings.WEBHOOKS_RETRY_SCHEDULE_SECONDS = (0.1, 0.1)


def attempt_and_time(store, url):
    channel_for(store, url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    started = time.monotonic()
    status = delivery_send(delivery_id=delivery.pk)
    elapsed = time.monotonic() - started
    delivery.refresh_from_db()
    return status, elapsed, delivery


def test_a_trickling_head_is_cut_at_the_attempt_budget_and_is_no_success(store, budget):
    # The status line says 200, but the headers never finish.
    receiver = TricklingReceiver(b"HTTP/1.1 200 OK\r\n", b"X-Slow: " + b"a" * 200)
    try:
        status, elapsed, delivery = attempt_and_time(store, receiver.url)
    finally:
        receiver.close()

    assert status == "pending"  # retried later: never succeeded without a complete 2xx
    assert elapsed < BUDGET_SECONDS + 1.0, elapsed
    attempt = delivery.attempt_records.get()
    assert attempt.response_status is None
    assert "timeout" in attempt.error


def test_a_trickling_body_is_cut_at_the_attempt_budget(store, budget):
    # A complete 2xx head is the receiver's answer; its body only goes into response_body.
    receiver = TricklingReceiver(b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n", b"b" * 500)
    try:
        status, elapsed, delivery = attempt_and_time(store, receiver.url)
    finally:
        receiver.close()

    assert status == "succeeded"
    assert elapsed < BUDGET_SECONDS + 1.0, elapsed
    assert delivery.attempt_records.get().response_status == 200


def test_a_slow_name_lookup_counts_against_the_attempt_budget(store, budget, monkeypatch):
    real_getaddrinfo = socket.getaddrinfo

    def slow_getaddrinfo(host, *args, **kwargs):
        if host == "slow-dns.example.test":
            time.sleep(3)
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", slow_getaddrinfo)

    status, elapsed, delivery = attempt_and_time(store, "http://slow-dns.example.test/hooks")

    assert status == "pending"
    assert elapsed < BUDGET_SECONDS + 1.0, elapsed
    assert delivery.attempt_records.get().response_status is None


def test_an_answer_within_the_budget_is_unaffected(store, budget, receiver):
    # given two attempts in a row on one kept-alive connection
    channel_for(store, receiver.url)
    first = WebhookDelivery.objects.get(event=record_order_completed(store, order_id=1))
    second = WebhookDelivery.objects.get(event=record_order_completed(store, order_id=2))

    # then neither is cut by the other's (cancelled) deadline
    assert delivery_send(delivery_id=first.pk) == "succeeded"
    time.sleep(BUDGET_SECONDS + 0.2)
    assert delivery_send(delivery_id=second.pk) == "succeeded"


@pytest.mark.parametrize(
    ("time_limit", "margin", "lease", "drain", "check_id", "refused"),
    [
        # a lease that ends with the hard time limit: an overrunning holder outlives it
        (45, 10, 45, 10, "webhooks.E001", True),
        (45, 10, 55, 10, "webhooks.E001", True),  # no margin left
        (45, 10, 55.5, 10, "webhooks.E001", False),
        (45, 1, 60, 10, "webhooks.E001", True),  # a margin under the watchdog's second
        (45, 10, 60, 35, "webhooks.E002", True),  # a drain's last attempt past its time limit
        (45, 10, 60, 34, "webhooks.E002", False),
    ],
)
def test_timings_that_let_a_send_outlive_its_leases_are_configuration_errors(
    settings, time_limit, margin, lease, drain, check_id, refused
):
    from django.core.checks import run_checks

    settings.WEBHOOKS_TIMEOUT_SECONDS = 10
    settings.WEBHOOKS_TIME_LIMIT_SECONDS = time_limit
    settings.WEBHOOKS_LEASE_MARGIN_SECONDS = margin
    settings.WEBHOOKS_LEASE_SECONDS = lease
    settings.WEBHOOKS_DRAIN_SECONDS = drain

    assert (check_id in [message.id for message in run_checks()]) is refused


@pytest.mark.parametrize(
    ("name", "value", "check_id", "refused"),
    [
        ("WEBHOOKS_HEARTBEAT_SECONDS", 1, "webhooks.E005", False),
        ("WEBHOOKS_HEARTBEAT_SECONDS", 0, "webhooks.E005", True),  # a renewing thread spinning
        ("WEBHOOKS_HEARTBEAT_SECONDS", 21, "webhooks.E005", True),  # past a third of 60 s
        ("WEBHOOKS_DNS_TIMEOUT_SECONDS", 2, "webhooks.E003", False),
        ("WEBHOOKS_DNS_TIMEOUT_SECONDS", 2.5, "webhooks.E003", True),  # holds a web worker
        ("WEBHOOKS_DNS_TIMEOUT_SECONDS", 0, "webhooks.E003", True),
        ("WEBHOOKS_CHANNEL_CONCURRENCY", 1, "webhooks.E004", False),
        ("WEBHOOKS_CHANNEL_CONCURRENCY", 0, "webhooks.E004", True),  # nothing ever sent
        ("WEBHOOKS_ACCOUNT_CONCURRENCY", 1, "webhooks.E004", False),
        ("WEBHOOKS_ACCOUNT_CONCURRENCY", 0, "webhooks.E004", True),
        ("WEBHOOKS_FAILING_CONCURRENCY", 1, "webhooks.E004", False),
        ("WEBHOOKS_FAILING_CONCURRENCY", 0, "webhooks.E004", True),
    ],
)
def test_bounded_settings_outside_their_bounds_are_configuration_errors(
    settings, name, value, check_id, refused
):
    from django.core.checks import run_checks

    setattr(settings, name, value)

    assert (check_id in [message.id for message in run_checks()]) is refused


@pytest.mark.parametrize("task_name", ["delivery_send_task", "channel_drain_task"])
def test_the_sending_tasks_are_killed_before_the_lease_of_their_attempt_ends(task_name):
    from django.conf import settings as django_settings

    from webhooks import tasks

    task = getattr(tasks, task_name)
    assert task.time_limit == django_settings.WEBHOOKS_TIME_LIMIT_SECONDS
    margin = django_settings.WEBHOOKS_LEASE_MARGIN_SECONDS
    assert 0 < task.time_limit + margin < django_settings.WEBHOOKS_LEASE_SECONDS


def test_a_forked_worker_process_expires_its_own_deadlines():
    # Celery's prefork children are forked: the parent's watchdog thread does not come along.
    import os

    from webhooks.dispatch.deadline import AttemptDeadline

    with AttemptDeadline(5):  # the parent's watchdog is running, waiting on this deadline
        pid = os.fork()
        if pid == 0:  # the child: exits 0 only if its own deadline expired
            try:
                with AttemptDeadline(0.1) as deadline:
                    time.sleep(0.6)
                os._exit(0 if deadline.expired else 1)
            except BaseException:
                os._exit(2)
    ends_at = time.monotonic() + 10
    while (waited := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < ends_at:
        time.sleep(0.05)
    if waited[0] == 0:  # hung (a lock copied from the parent while held): a failure too
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    assert waited[0] == pid and os.waitstatus_to_exitcode(waited[1]) == 0
