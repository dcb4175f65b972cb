"""What the suite clears between tests is the cache's alone: the Celery broker's queues and beat's
scheduling lock, under workers that stay up across tests, are in another Redis database, and
each pytest-xdist worker has databases of its own. And the clock the rate limiter reads stands
still in every test that does not opt out."""

import itertools
import json
import os
import time
from collections import Counter
from types import SimpleNamespace

import pytest
import redis
from django.conf import settings
from django.core.cache import cache

from config.celery import app
from core.api import ratelimit
from core.operations.beat import BEAT_LOCK_KEY
from tests.ordering import DURATIONS, MEAN_TEST_SECONDS, longest_files_first
from tests.settings_helpers import run_python

QUEUE = "suite-isolation-probe"


def test_a_tests_cache_clearing_leaves_the_broker_queue_and_the_beat_lock(cache_cleared):
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    # given a queued task message, beat's lock taken, and a rate-limit counter in the cache
    app.send_task("suite.isolation_probe", queue=QUEUE)
    # (set, not set-if-absent: a beat that an earlier test of this process stopped can leave
    # its lock to run out by itself)
    broker.set(BEAT_LOCK_KEY, "held by a beat", ex=30)
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


def test_another_xdist_workers_cache_and_broker_are_not_this_ones():
    # given the test settings as another pytest-xdist worker's process loads them
    # (gw6: above the 3 workers of `make test`, within Redis' 16 databases)
    worker = "gw6" if os.environ.get("PYTEST_XDIST_WORKER") != "gw6" else "gw5"
    environment = {**os.environ, "PYTEST_XDIST_WORKER": worker}
    script = (
        "import django; django.setup(); from django.core.cache import cache; "
        "from django.conf import settings; import redis; "
        "cache.set('isolation-probe', 'other worker'); "
        "redis.Redis.from_url(settings.CELERY_BROKER_URL).set('isolation-probe', 'broker')"
    )
    cache.delete("isolation-probe")

    # when it caches a key and writes one into its broker's database
    result = run_python(script, env=environment)

    # then neither is in this worker's cache or broker database
    assert result.returncode == 0, result.stderr
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    assert cache.get("isolation-probe") is None
    assert broker.get("isolation-probe") is None


def test_every_collected_test_has_a_node_id_of_its_own(request):
    # pytest-xdist schedules by node id: two tests sharing one would run once
    node_ids = [item.nodeid for item in request.session.items]
    assert len(node_ids) == len(set(node_ids))


def test_the_files_start_longest_first_and_xdist_keeps_that_order(request):
    # pytest-xdist's loadfile hands out files in the collection's order unless it reorders them
    # by number of tests, which sent the few long fault and image tests last (tests/ordering.py)
    assert request.config.getoption("loadscopereorder") is False
    recorded = json.loads(DURATIONS.read_text())
    longest, middle, shortest = (
        sorted(recorded, key=recorded.get)[-1],
        sorted(recorded, key=recorded.get)[len(recorded) // 2],
        sorted(recorded, key=recorded.get)[0],
    )
    # two files not recorded, 50 tests each at the mean (35 s: after the longest), whose
    # tests come interleaved (pytest-django orders all tests by their kind of database use)
    new_a, new_b = "tests/test_a_not_recorded.py", "tests/test_b_not_recorded.py"
    collected = [
        SimpleNamespace(nodeid=f"{path}::test_{n}")
        for path, count in ((shortest, 2), (middle, 2), (longest, 2))
        for n in range(count)
    ]
    collected[2:2] = [
        SimpleNamespace(nodeid=f"{path}::test_{n}") for n in range(50) for path in (new_b, new_a)
    ]
    longest_files_first(collected)
    files = [item.nodeid.split("::")[0] for item in collected]
    assert [path for path, _ in itertools.groupby(files)] == [
        longest,
        new_a,
        new_b,
        middle,
        shortest,
    ]
    assert [item.nodeid for item in collected][:3] == [
        f"{longest}::test_0",
        f"{longest}::test_1",
        f"{new_a}::test_0",
    ]
    # and this run's own collection is so ordered (all of it when the whole suite runs)
    run = [item.nodeid.split("::")[0] for item in request.session.items]
    starts = list(dict.fromkeys(run))
    assert [path for path, _ in itertools.groupby(run)] == starts
    counts = Counter(run)
    seconds = [recorded.get(path, counts[path] * MEAN_TEST_SECONDS) for path in starts]
    assert seconds == sorted(seconds, reverse=True)


def test_the_rate_limiter_reads_a_clock_stopped_30_s_into_a_window(frozen_rate_limit_clock):
    assert ratelimit.time.time() == frozen_rate_limit_clock
    assert frozen_rate_limit_clock % 60 == 30


@pytest.mark.rate_limit_wall_clock
def test_a_test_marked_rate_limit_wall_clock_runs_on_the_real_clock():
    assert abs(ratelimit.time.time() - time.time()) < 1
