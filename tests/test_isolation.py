"""What the suite clears between tests is the cache's alone: the Celery broker's queues and beat's
scheduling lock share its Redis database, under workers that stay up across tests. And the
clock the rate limiter reads stands still in every test that does not opt out."""

import time

import pytest
import redis
from django.conf import settings
from django.core.cache import cache

from config.api import ratelimit
from config.beat import BEAT_LOCK_KEY
from config.celery import app

QUEUE = "suite-isolation-probe"


def test_a_tests_cache_clearing_leaves_the_broker_queue_and_the_beat_lock(cache_cleared):
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    # given a queued task message, beat's lock taken, and a rate-limit counter in the cache
    app.send_task("suite.isolation_probe", queue=QUEUE)
    assert broker.set(BEAT_LOCK_KEY, "held by a beat", ex=30, nx=True)
    cache.set("ratelimit:probe", 1)
    try:
        # when the next test starts
        cache_cleared()

        # then the cache is empty, and the broker and beat keep what they hold
        assert cache.get("ratelimit:probe") is None
        assert broker.llen(QUEUE) == 1
        assert broker.get(BEAT_LOCK_KEY) == b"held by a beat"
    finally:
        broker.delete(QUEUE, BEAT_LOCK_KEY)


def test_the_rate_limiter_reads_a_clock_stopped_30_s_into_a_window(frozen_rate_limit_clock):
    assert ratelimit.time.time() == frozen_rate_limit_clock
    assert frozen_rate_limit_clock % 60 == 30


@pytest.mark.rate_limit_wall_clock
def test_a_test_marked_rate_limit_wall_clock_runs_on_the_real_clock():
    assert abs(ratelimit.time.time() - time.time()) < 1
