"""What the suite clears between tests is the cache's alone: the Celery broker's queues and beat's
scheduling lock share its Redis database, under workers that stay up across tests."""

import redis
from django.conf import settings
from django.core.cache import cache

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
