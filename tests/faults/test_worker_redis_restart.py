"""A Redis restart must not end a worker.

A real `celery -A config worker` on a Redis of this test's own holds an unacknowledged message
(a task with a countdown, as a webhook retry is: kombu keeps it unacknowledged until it runs)
while Redis restarts, empty, on the same port. With kombu's own transport the worker logged
`Restoring 1 unacknowledged message(s)`, then `CRITICAL Unrecoverable error:
AttributeError("'NoneType' object has no attribute 'hostname'")` and exited (every restart
here; 5 of 7 in the issue's fault run). config/broker.py is why it now stays up and consumes
again once Redis is back. And a worker that does end (here kill -9, with the Redis restart)
shows on /status within its heartbeat window.
"""

import re
import time

import pytest
import redis
from django.conf import settings
from django.test import Client, override_settings

from config.celery import app
from core.operations.worker_heartbeat import WORKER_HEARTBEAT_TASK, worker_heartbeat_last
from tests.faults.redis_helpers import WorkerOnRedis
from tests.servers import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

RESTARTS = 3
HELD_COUNTDOWN = 600  # seconds: the held task never runs during the test
QUEUES = ("webhooks", "maintenance")


def cache_on(redis_url: str) -> dict:
    """CACHES for override_settings: the worker's cache (WorkerOnRedis), read by /status."""
    return {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis_url,
        }
    }


def send_heartbeat(redis_url: str, name: str, **options) -> None:
    """The heartbeat task, recording `name` (core/operations/worker_heartbeat.py), on the webhooks
    queue
    of the broker at `redis_url`, through a connection of its own (the last one may be gone)."""
    with app.connection_for_write(redis_url) as connection:
        app.send_task(
            WORKER_HEARTBEAT_TASK, args=[name], queue="webhooks", connection=connection, **options
        )


def test_a_worker_holding_unacknowledged_messages_lives_through_redis_restarts(
    redis_server, tmp_path
):
    log_dir = tmp_path / "worker"
    log_dir.mkdir()
    worker = WorkerOnRedis(log_dir, redis_server.url, beat=False)
    worker.start()
    broker = redis.Redis.from_url(redis_server.url)

    def log() -> str:
        return worker.log_path.read_text(errors="replace")[-4000:]

    try:
        with override_settings(CACHES=cache_on(redis_server.url)):
            for restart in range(1, RESTARTS + 1):
                # given: the worker holds a task with a countdown, unacknowledged
                send_heartbeat(redis_server.url, f"held-{restart}", countdown=HELD_COUNTDOWN)
                wait_for(
                    lambda: broker.hlen("unacked") >= 1,
                    timeout=30,
                    what=f"the worker holding the task of round {restart}",
                    process=worker.process,
                    log=log,
                )

                # when: Redis restarts, empty
                redis_server.stop()
                time.sleep(1.0)
                redis_server.start()

                # then: the same process takes a task sent after the restart
                name = f"after-restart-{restart}"
                send_heartbeat(redis_server.url, name)
                wait_for(
                    lambda name=name: worker_heartbeat_last(name) is not None,
                    timeout=45,
                    interval=0.2,
                    what=f"a task taken after restart {restart}",
                    process=worker.process,
                    log=log,
                )
        assert worker.process.poll() is None and worker.starts == 1
        full_log = worker.log_path.read_text(errors="replace")
        assert len(re.findall(r"Restoring \d+ unacknowledged message", full_log)) == RESTARTS
        assert "Unrecoverable error" not in full_log
    finally:
        worker.stop()
        broker.close()


def worker_checks() -> tuple[int, dict]:
    response = Client().get("/status")
    checks = response.json()["checks"]
    return response.status_code, {queue: checks[f"worker_{queue}"]["status"] for queue in QUEUES}


def test_a_worker_that_ends_shows_on_status_within_its_heartbeat_window(redis_server, tmp_path):
    log_dir = tmp_path / "worker"
    log_dir.mkdir()
    worker = WorkerOnRedis(log_dir, redis_server.url)  # with beat, which sends the heartbeats
    worker.start()
    window = 2 * settings.WORKER_HEARTBEAT_SECONDS + settings.BEAT_HEARTBEAT_SECONDS
    try:
        with override_settings(CACHES=cache_on(redis_server.url)):
            wait_for(
                lambda: worker_checks()[1] == {queue: "ok" for queue in QUEUES},
                timeout=30,
                interval=0.25,
                what="both queues' heartbeats ok",
            )
            # when: the worker ends (kill -9) and Redis restarts, empty, as in the run
            worker.kill()
            ended = time.monotonic()
            redis_server.stop()
            redis_server.start()

            # then: /status fails on both queues within the window (plus its result's reuse)
            def both_failing() -> bool:
                code, checks = worker_checks()
                return code == 503 and set(checks.values()) <= {"stale", "never_seen"}

            wait_for(
                both_failing,
                timeout=window + settings.HEALTH_CHECK_RESULT_SECONDS + 5,
                interval=0.25,
                what="/status reporting the queues without a worker",
            )
            assert time.monotonic() - ended <= window + settings.HEALTH_CHECK_RESULT_SECONDS + 1
    finally:
        worker.stop()
