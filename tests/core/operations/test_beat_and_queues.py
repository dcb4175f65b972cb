"""Beat's scheduling lock and the task queues, read from the real Redis broker.

Two beats are two LockedScheduler instances, as `celery beat` builds them, on the suite's
Redis: the messages they publish are counted in the broker's queue lists.
"""

import json
import time

import pytest

from config.celery import app
from core.api.tasks import idempotency_keys_prune_task
from core.operations.beat import LockedScheduler
from events.tasks import partitions_upkeep_task
from oauth_cli.tasks import oauth_prune_task
from webhooks.tasks import channel_drain_task, deliveries_sweep_task, delivery_send_task

QUEUES = ("webhooks", "maintenance", "celery")


def queued_tasks(broker, queue):
    return [json.loads(message)["headers"]["task"] for message in broker.lrange(queue, 0, -1)]


@pytest.fixture
def probe_schedule():
    """One periodic task due every 0.2 s (routed to `maintenance`)."""
    configured = app.conf.beat_schedule
    app.conf.beat_schedule = {"probe": {"task": "api.idempotency_keys_prune", "schedule": 0.2}}
    yield
    app.conf.beat_schedule = configured


@pytest.fixture
def make_beat(tmp_path, probe_schedule):
    beats = []

    def make(name):
        beat = LockedScheduler(app=app, schedule_filename=str(tmp_path / name), lazy=False)
        beats.append(beat)
        return beat

    yield make
    for beat in beats:
        beat.close()


def tick_for(seconds, *beats):
    """Ticks each beat in turn for `seconds`, as `celery beat` does between its sleeps."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for beat in beats:
            beat.tick()
        time.sleep(0.05)


def test_a_second_beat_stands_by_while_the_first_schedules(broker, make_beat):
    first, second = make_beat("first"), make_beat("second")
    tick_for(1.1, first, second)
    assert first.scheduling and not second.scheduling
    # every 0.2 s for about a second, sent once each time: not twice
    sent = queued_tasks(broker, "maintenance")
    assert 3 <= len(sent) <= 6
    assert set(sent) == {"api.idempotency_keys_prune"}


def test_the_standby_beat_takes_over_when_the_first_stops(broker, make_beat):
    first, second = make_beat("first"), make_beat("second")
    tick_for(0.3, first, second)
    assert not second.scheduling
    # when the first shuts down (releases the lock)
    first.close()
    broker.delete("maintenance")
    tick_for(0.7, second)
    assert second.scheduling
    assert len(queued_tasks(broker, "maintenance")) >= 2


def test_the_standby_beat_takes_over_after_the_lock_expires(broker, make_beat, settings):
    # given a first beat that dies without releasing its lock (kill -9)
    settings.BEAT_LOCK_SECONDS = 1
    first, second = make_beat("first"), make_beat("second")
    tick_for(0.3, first, second)
    assert first.scheduling and not second.scheduling
    # when it stops ticking, the second stands by until the lock expires, then schedules
    tick_for(0.6, second)
    assert not second.scheduling
    tick_for(0.8, second)
    assert second.scheduling


def test_webhook_tasks_go_to_the_webhooks_queue_and_maintenance_to_its_own(broker):
    # given both queues declared and bound, as a worker consuming both leaves them
    with app.connection_for_write() as connection:
        for queue in app.amqp.queues.values():
            queue.bind(connection.default_channel).declare()
    delivery_send_task.delay("00000000-0000-0000-0000-000000000000")
    channel_drain_task.delay(1)
    deliveries_sweep_task.delay()
    partitions_upkeep_task.delay()
    oauth_prune_task.delay()
    idempotency_keys_prune_task.delay()

    assert sorted(queued_tasks(broker, "webhooks")) == [
        "webhooks.channel_drain",
        "webhooks.deliveries_sweep",
        "webhooks.delivery_send",
    ]
    assert sorted(queued_tasks(broker, "maintenance")) == [
        "api.idempotency_keys_prune",
        "events.partitions",
        "oauth_cli.prune",
    ]
    assert broker.llen("celery") == 0
