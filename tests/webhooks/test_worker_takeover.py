"""A worker killed mid-send (kill -9) stalls its store's deliveries for seconds, not for the
whole lease: its leases and its drain's marker are kept alive only while it lives
(webhooks/dispatch/leases.py), and the sweeper queues what it left (
docs/decisions/hardening.md "Hardening IV").

Real `celery -A config worker` processes on the test PostgreSQL and Redis, with the production
lease, time limit, requeue window, send timeout and drain length; the sweep runs every 2 s (in
production beat is its own process and keeps sweeping while a worker is down).
"""

import threading
import time

import pytest

from tests.servers import wait_for
from tests.webhooks.helpers import Reply, channel_for, record_order_completed
from webhooks.dispatch.attempts import ABANDONED_ATTEMPT_ERROR
from webhooks.models import WebhookDelivery

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

PRODUCTION_TIMINGS = {
    "WEBHOOKS_LEASE_SECONDS": "60",
    "WEBHOOKS_TIME_LIMIT_SECONDS": "45",
    "WEBHOOKS_LEASE_MARGIN_SECONDS": "10",
    "WEBHOOKS_REQUEUE_AFTER_SECONDS": "60",
    "WEBHOOKS_TIMEOUT_SECONDS": "10",
    "WEBHOOKS_DRAIN_SECONDS": "10",
    "WEBHOOKS_SWEEP_INTERVAL_SECONDS": "2",
    # One send at a time to the channel: a takeover while the dead worker still held its
    # slot would show as two requests in flight at once.
    "WEBHOOKS_CHANNEL_CONCURRENCY": "1",
}
RESUMED_WITHIN_SECONDS = 10


class FirstHeldReceiver:
    """Holds the first request until released; answers the others after a short while, and
    counts the requests in flight."""

    def __init__(self, receiver):
        self.release = threading.Event()
        self.held = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        receiver.respond = self.respond

    def respond(self, request):
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            hold = not self.held
            if hold:
                self.held.append(request)
        if hold:
            self.release.wait(timeout=60)
        else:
            time.sleep(0.2)
        with self.lock:
            self.in_flight -= 1
        return Reply(200)


def test_a_killed_workers_deliveries_resume_within_seconds_of_a_new_worker(
    start_worker, store, receiver
):
    # given a worker sending a store's deliveries, its first request held by the receiver
    first = start_worker(PRODUCTION_TIMINGS, beat=False)
    channel_for(store, receiver.url)
    held = FirstHeldReceiver(receiver)
    events = [record_order_completed(store, order_id=n) for n in range(1, 7)]
    wait_for(lambda: held.held, timeout=30, what="a first request in flight")

    # when the whole worker is killed mid-send, and a new one is ready
    first.kill()
    held.release.set()  # the dead worker's request is over: only live ones count from here
    with held.lock:
        held.most_in_flight = 0
    start_worker(PRODUCTION_TIMINGS)

    # then every delivery is sent within seconds, one request at a time
    def all_succeeded():
        statuses = list(WebhookDelivery.objects.values_list("status", flat=True))
        return len(statuses) == len(events) and set(statuses) == {"succeeded"}

    wait_for(all_succeeded, timeout=RESUMED_WITHIN_SECONDS, what="every delivery sent")
    assert held.most_in_flight == 1
    # the attempt in flight at the kill was taken over, and recorded as abandoned
    in_flight = WebhookDelivery.objects.get(event_id=held.held[0].headers["webhook-id"])
    assert in_flight.attempt_records.get(number=1).error == ABANDONED_ATTEMPT_ERROR
    delivered = {request.headers["webhook-id"] for request in receiver.received()}
    assert delivered == {event.id for event in events}
