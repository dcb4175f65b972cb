"""A worker consuming the webhooks queue kills a send a margin before its leases run out
(docs/decisions/webhooks.md "Leases and the hard time limit"): it does not start on a pool without
hard time limits, nor on timings the webhooks checks refuse."""

import subprocess

import pytest

from tests.webhooks.helpers import BASE_DIR, CeleryWorker

pytestmark = pytest.mark.worker


def start_refused(worker: CeleryWorker) -> str:
    """The worker's output, once it exited (it must: it is refused)."""
    done = subprocess.run(
        worker.command(), cwd=BASE_DIR, env=worker.env(), capture_output=True, timeout=60
    )
    assert done.returncode != 0, done.stdout.decode()[-2000:]
    return done.stderr.decode()


@pytest.mark.parametrize("pool", ["threads", "solo"])
@pytest.mark.parametrize("queues", [None, ["webhooks"]])
def test_a_webhooks_worker_on_a_pool_without_hard_time_limits_does_not_start(
    tmp_path, pool, queues
):
    output = start_refused(CeleryWorker(tmp_path, queues=queues, beat=False, pool=pool))

    assert "refusing to start: this worker consumes the 'webhooks' queue" in output
    assert "only the prefork pool enforces them" in output


def test_a_webhooks_worker_whose_lease_does_not_outlast_its_time_limit_does_not_start(
    tmp_path,
):
    lease_as_long_as_the_limit = {"WEBHOOKS_LEASE_SECONDS": "3"}  # WORKER_ENV's limit
    worker = CeleryWorker(tmp_path, beat=False, extra_env=lease_as_long_as_the_limit)
    output = start_refused(worker)

    assert "refusing to start: " in output
    assert "webhooks.E001" in output


@pytest.mark.django_db
def test_a_worker_without_the_webhooks_queue_may_use_any_pool(tmp_path):
    worker = CeleryWorker(tmp_path, queues=["maintenance"], beat=False, pool="solo")
    try:
        worker.start()  # asserts it is running once ready
    finally:
        worker.stop()
