"""/status reports whether some worker consumes each queue (a heartbeat per queue).

Beat sends `health.worker_heartbeat` to each queue every WORKER_HEARTBEAT_SECONDS (0.5 s in the
test settings); the worker that takes it records the time. The workers here are real
`celery -A config worker` processes on the suite's PostgreSQL and Redis, with or without `-Q`
and an embedded beat (-B); the queues are read from the broker's Redis lists.
"""

import base64
import json
import time
from datetime import datetime
from itertools import pairwise

import pytest
from django.conf import settings
from django.test import Client

from config.celery import app
from config.settings.health import worker_heartbeat_schedule
from core.operations.beat import LockedScheduler
from tests.servers import wait_for
from tests.settings_helpers import production_environment, settings_of
from tests.webhooks.helpers import CeleryWorker

QUEUES = ("webhooks", "maintenance")


def status():
    response = Client().get("/status")
    return response.status_code, response.json()


def worker_checks():
    return {queue: status()[1]["checks"][f"worker_{queue}"] for queue in QUEUES}


def stale_after():
    return 2 * settings.WORKER_HEARTBEAT_SECONDS + settings.BEAT_HEARTBEAT_SECONDS


def waiting_heartbeats(broker, queue):
    """The heartbeat messages waiting in `queue`, oldest first."""
    messages = [json.loads(raw) for raw in reversed(broker.lrange(queue, 0, -1))]
    return [m for m in messages if m["headers"]["task"] == "health.worker_heartbeat"]


@pytest.fixture
def start_heartbeat_worker(tmp_path, broker):
    """`start_heartbeat_worker(name, **options)`: a one-process worker (and by default its beat)
    logging under `name`, stopped cleanly after the test."""
    workers = []

    def start(name, **options):
        log_dir = tmp_path / name
        log_dir.mkdir()
        worker = CeleryWorker(log_dir, concurrency=1, **options)
        workers.append(worker)
        worker.start()
        return worker

    yield start
    for worker in workers:
        worker.stop()


# --- with real workers ------------------------------------------------------------------------


@pytest.mark.worker
@pytest.mark.django_db
def test_a_worker_on_both_queues_makes_both_ok_and_both_go_stale_when_it_stops(
    start_heartbeat_worker, time_machine
):
    # before any worker took a heartbeat
    assert worker_checks() == {
        queue: {"status": "never_seen", "seconds_since_heartbeat": None} for queue in QUEUES
    }
    # a worker consuming every queue, with the beat that sends the heartbeats
    worker = start_heartbeat_worker("both")
    wait_for(
        lambda: all(check["status"] == "ok" for check in worker_checks().values()),
        timeout=30,
        what="both queues' heartbeats ok",
    )
    code, body = status()
    assert code == 200, body
    assert body["checks"]["worker_webhooks"]["seconds_since_heartbeat"] <= stale_after()

    # when the worker (and its beat) stops: silent for more than two intervals plus a tick
    worker.stop()
    time_machine.move_to(time.time() + stale_after() + 0.3)
    code, body = status()
    assert code == 503
    assert {"worker_webhooks", "worker_maintenance"} <= set(body["failing"])
    for queue in QUEUES:
        check = body["checks"][f"worker_{queue}"]
        assert check["status"] == "stale"
        assert check["seconds_since_heartbeat"] > stale_after()


@pytest.mark.worker
@pytest.mark.django_db
def test_a_worker_consuming_only_webhooks_leaves_maintenance_never_seen(
    start_heartbeat_worker, broker
):
    start_heartbeat_worker("webhooks-only", queues=["webhooks"])
    wait_for(
        lambda: worker_checks()["webhooks"]["status"] == "ok",
        timeout=30,
        what="webhooks heartbeat ok",
    )
    # several intervals later, nothing consumed `maintenance` (real time: the worker's beat has
    # to run through those intervals for the queue to show what it sent)
    time.sleep(stale_after() + 0.3)
    code, body = status()
    assert code == 503
    assert body["failing"] == ["worker_maintenance"]
    assert body["checks"]["worker_webhooks"]["status"] == "ok"
    assert body["checks"]["worker_maintenance"] == {
        "status": "never_seen",
        "seconds_since_heartbeat": None,
    }
    # beat sent `maintenance` one heartbeat, not one per interval: it is still waiting
    assert len(waiting_heartbeats(broker, "maintenance")) == 1

    # when a worker starts consuming `maintenance`, it takes it
    start_heartbeat_worker("maintenance-only", queues=["maintenance"], beat=False)
    wait_for(
        lambda: worker_checks()["maintenance"]["status"] == "ok",
        timeout=30,
        what="maintenance heartbeat ok",
    )
    assert status()[0] == 200


# --- beat's side, with no worker --------------------------------------------------------------


@pytest.fixture
def heartbeat_schedule():
    """Only the heartbeats, every 0.2 s, expiring after 1 s."""
    schedule = worker_heartbeat_schedule(0.2)
    for entry in schedule.values():
        entry["options"]["expires"] = 1
    configured = app.conf.beat_schedule
    app.conf.beat_schedule = schedule
    yield
    app.conf.beat_schedule = configured


@pytest.fixture
def beat(tmp_path, heartbeat_schedule):
    scheduler = LockedScheduler(app=app, schedule_filename=str(tmp_path / "beat"), lazy=False)
    yield scheduler
    scheduler.close()


def tick_for(seconds, beat):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        beat.tick()
        time.sleep(0.05)


def test_an_unconsumed_queue_holds_one_heartbeat_per_expiry_not_one_per_interval(beat, broker):
    # 2.5 s at one heartbeat per 0.2 s would be 12 per queue; each expires after 1 s
    tick_for(2.5, beat)
    for queue in QUEUES:
        waiting = waiting_heartbeats(broker, queue)
        assert 2 <= len(waiting) <= 3, (queue, len(waiting))
        # each carries its expiry, so a worker that comes back discards the older ones
        sent_apart = [
            datetime.fromisoformat(later["headers"]["expires"])
            - datetime.fromisoformat(earlier["headers"]["expires"])
            for earlier, later in pairwise(waiting)
        ]
        assert all(apart.total_seconds() >= 1 for apart in sent_apart), sent_apart
        # the argument names the queue the worker records
        assert json.loads(base64.b64decode(waiting[0]["body"]))[0] == [queue]


def test_the_interval_comes_from_the_environment_and_each_queue_gets_its_entry():
    environment = production_environment(WORKER_HEARTBEAT_SECONDS="45")
    configured = settings_of(environment, "HEALTH_BEAT_SCHEDULE")
    assert configured["HEALTH_BEAT_SCHEDULE"] == {
        f"worker-heartbeat-{queue}": {
            "task": "health.worker_heartbeat",
            "schedule": 45,
            "args": [queue],
            "options": {"queue": queue, "expires": 900},
        }
        for queue in QUEUES
    }
