import fcntl
import os
import shutil
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from django.conf import settings as django_settings
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client
from hypothesis import settings as hypothesis_settings
from rest_framework.test import APIClient

from core.api import ratelimit
from core.operations import health
from oauth_cli.services import cli_application_ensure
from tests.clocks import FROZEN_RATE_LIMIT_NOW, next_window_middle
from tests.factories import MembershipFactory, StoreFactory, UserFactory, make_api_key
from tests.oauth_cli.flow import connect
from tests.ordering import longest_files_first
from tests.scheduling import FileScheduling
from tests.servers import SentryIngest, ThrowawayRedis, worker_postgresql
from tests.webhooks.helpers import CeleryWorker, Receiver

# The CI profile, loaded on every run: the contract run (tests/core/api/test_contract.py) draws the
# same examples on every run and machine, so a failure found once is found again.
hypothesis_settings.register_profile("ci", derandomize=True, database=None)
hypothesis_settings.load_profile("ci")


def pytest_configure(config):
    """Under pytest-xdist, each worker runs on a PostgreSQL server of its own
    (tests.servers.worker_postgresql), set before any connection opens; the processes its tests
    start follow DATABASE_URL or the connection's settings."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return
    workdir = Path(tempfile.mkdtemp(prefix="pg-", dir=os.environ.get("STOREFRONT_TEST_WORKDIR")))
    server = worker_postgresql(workdir)
    config.add_cleanup(lambda: server.stop("immediate"))
    django_settings.DATABASES["default"].update(HOST="127.0.0.1", PORT=server.port)
    os.environ["DATABASE_URL"] = server.url()


def pytest_collection_modifyitems(items):
    """schemathesis names its items `test[METHOD path]` but builds each one's node id from the
    function's name alone; pytest-xdist schedules by node id, and ran one operation of the
    contract run out of 30. Each such item is made again through pytest's public constructor,
    `from_parent` with its own name, which gives it the node id its name says. Then the files
    are ordered longest first (tests/ordering.py)."""
    for index, item in enumerate(items):
        if item.nodeid != f"{item.parent.nodeid}::{item.name}":
            items[index] = named_again(item)
    longest_files_first(items)


def named_again(item):
    """`item` as a new item of its class whose node id is its parent's and its own name."""
    return type(item).from_parent(
        item.parent,
        name=item.name,
        callobj=item.obj,
        test_func=item.test_function,
        operation_label=item.operation_label,
        operation_tags=item.operation_tags,
    )


# The directory the `alone` locks live in, one for every worker of a run (the controller's).
ALONE_LOCKS = pytest.StashKey[Path]()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist's controller hands each worker the run's directory of `alone` locks."""
    config = node.config
    if ALONE_LOCKS not in config.stash:
        workdir = os.environ.get("STOREFRONT_TEST_WORKDIR")
        config.stash[ALONE_LOCKS] = Path(tempfile.mkdtemp(prefix="alone-", dir=workdir))
        config.add_cleanup(lambda: shutil.rmtree(config.stash[ALONE_LOCKS], ignore_errors=True))
    node.workerinput["alone_locks"] = str(config.stash[ALONE_LOCKS])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile` runs on the suite's file scheduler (tests/scheduling.py): files longest
    first, one at a time, and the contract run on the first worker, the one that built its
    examples."""
    if config.getoption("dist") == "loadfile":
        return FileScheduling(config, log)
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Under pytest-xdist, a test marked `alone` (it stops the suite's own Redis, which every
    worker uses) runs while no other test does: every other test holds a shared lock for its
    setup, call and teardown, an `alone` test the exclusive one. A turnstile lock keeps new
    tests from starting while an `alone` test waits."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return (yield)
    shared = Path(item.config.workerinput["alone_locks"])
    alone = item.get_closest_marker("alone") is not None
    with ExitStack() as held:
        turnstile = held.enter_context((shared / "alone-turnstile").open("a"))
        running = held.enter_context((shared / "alone-running").open("a"))
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        if not alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        fcntl.flock(running, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        fcntl.flock(turnstile, fcntl.LOCK_UN)
        return (yield)


def cache_keys_matching(pattern: str = "*") -> list[bytes]:
    """The cache's own keys (KEY_PREFIX:VERSION:key, as Django makes them) matching `pattern`."""
    client = cache._cache.get_client()
    return list(client.scan_iter(match=cache.make_key(pattern), count=1000))


@pytest.fixture
def cache_keys():
    """`cache_keys(pattern)`: the cache's keys matching a glob pattern (as the code names them)."""
    return cache_keys_matching


@pytest.fixture(autouse=True)
def cache_cleared():
    """Rate-limit counters live in Redis; each test starts with fresh budgets, and without the
    limiter's pause left by a simulated outage in an earlier test.
    Returns the clearing, for the test of what it leaves."""
    ratelimit._cache_unavailable_until = 0.0
    # The cache's own Redis database (config/settings/test.py): the broker's is another one.
    cache.clear()
    return cache.clear


@pytest.fixture(autouse=True)
def _fresh_health_checks(settings, monkeypatch):
    """Every probe (/readyz, /status, the health gauge of /metrics) runs its checks (tests
    stop and start dependencies between two probes, and a scrape's queries are counted), and
    each test starts with no check known to be failing; tests that poll /status until a worker
    answers are not stopped by the probe limit. Tests of the shared results and of the limit
    set their setting themselves."""
    settings.HEALTH_CHECK_RESULT_SECONDS = 0
    settings.HEALTH_RATE_LIMIT_PER_MINUTE = 1_000_000
    monkeypatch.setattr(health, "_runs", {})
    monkeypatch.setattr(health, "_failing", {})


@pytest.fixture(autouse=True)
def _started_long_ago(monkeypatch):
    """/status as a long-running process answers it: past its `starting` window."""
    monkeypatch.setattr(health, "started_at", 0.0)


@pytest.fixture
def api_client():
    return APIClient()


@pytest.fixture
def user(db):
    return UserFactory()


@pytest.fixture
def store(user):
    return MembershipFactory(user=user).store


@pytest.fixture
def api_key(user, store):
    return make_api_key(user)


@pytest.fixture
def auth_client(api_key):
    """A client authenticated with an all-abilities API key of `user`, owner of `store`."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key}")
    return client


@pytest.fixture
def other_store(db):
    """A store of another user: nothing of it may be visible to `user`."""
    return StoreFactory()


@pytest.fixture
def client_for():
    """`client_for(secret, **headers)`: an APIClient sending `Authorization: Bearer <secret>`."""

    def make(secret, **headers):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}", **headers)
        return client

    return make


@pytest.fixture(autouse=True)
def frozen_rate_limit_clock(request, monkeypatch):
    """Stops the clock the rate limiter reads, 30 s into a window, for every test (opt out with
    @pytest.mark.rate_limit_wall_clock): requests of one test can never fall into two windows
    (a fresh budget mid-test), and Reset/Retry-After are exact. Only the limiter's clock: a
    global freeze would also stop the clocks of the threads and servers a test starts, and part
    Python's time from the database's now(). A test that moves Python's clock with time-machine
    (`rate_limit_window`, `time_machine`) has the limiter on that clock instead."""
    if request.node.get_closest_marker("rate_limit_wall_clock"):
        return None
    if "time_machine" in request.fixturenames:
        return None
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(time=lambda: FROZEN_RATE_LIMIT_NOW))
    return FROZEN_RATE_LIMIT_NOW


@pytest.fixture
def rate_limit_window(time_machine):
    """Python's clock stopped 30 s into the next rate-limit window (a minute), within two
    minutes of the real time, so rows stay in the database's days: a test of the windows moves
    it with `rate_limit_window.shift(seconds)` (time-machine's fixture)."""
    time_machine.move_to(next_window_middle(time.time()), tick=False)
    return time_machine


@pytest.fixture
def signed_in(user):
    """A browser session signed in as `user`."""
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def tokens(signed_in):
    """Token response of a CLI connection of `user`, minted through the real authorize-then-token
    flow (as django-oauth-toolkit's own tests do)."""
    cli_application_ensure()
    return connect(signed_in)


@pytest.fixture
def oauth_client(tokens, client_for):
    """An APIClient sending `user`'s OAuth access token."""
    return client_for(tokens["access_token"])


@pytest.fixture(scope="session")
def schema(tmp_path_factory):
    """The OpenAPI document as /api/schema/ serves it, generated once per run."""
    target = tmp_path_factory.mktemp("schema") / "schema.yaml"
    call_command("spectacular", "--file", str(target))
    return yaml.safe_load(target.read_text())


@pytest.fixture
def receiver():
    """A webhook receiver thread (tests.webhooks.helpers.Receiver), closed after the test."""
    server = Receiver()
    yield server
    server.close()


@pytest.fixture
def ingest():
    """A Sentry ingest server on a free loopback port (tests.servers.SentryIngest)."""
    server = SentryIngest()
    yield server
    server.server.shutdown()
    server.server.server_close()


@pytest.fixture
def own_redis(tmp_path):
    """A redis-server of this test alone (tests.servers.ThrowawayRedis), which the test may stop
    and start again on the same port."""
    workdir = tmp_path / "own-redis"
    workdir.mkdir()
    server = ThrowawayRedis(workdir)
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="module")
def celery_worker(django_db_setup, django_db_blocker, tmp_path_factory):
    """One worker for a module's tests (fault tests kill and restart it)."""
    from config.celery import app

    app.control.purge()  # messages of earlier tests point at rows that no longer exist
    worker = CeleryWorker(tmp_path_factory.mktemp("celery"))
    with django_db_blocker.unblock():
        worker.start()
    worker.supervise()
    yield worker
    worker.stop()


@pytest.fixture
def start_worker(django_db_setup, django_db_blocker, tmp_path_factory):
    """`start_worker(extra_env, **kwargs)`: a CeleryWorker started now, killed after the test."""
    from config.celery import app

    workers = []

    def start(extra_env: dict, **kwargs) -> CeleryWorker:
        worker = CeleryWorker(
            tmp_path_factory.mktemp("celery-slots"), extra_env=extra_env, **kwargs
        )
        with django_db_blocker.unblock():
            worker.start()
        workers.append(worker)
        return worker

    app.control.purge()
    yield start
    # Torn down before the test's database flush (sends in flight would block it).
    for worker in workers:
        if worker.process.poll() is None:
            worker.kill()
    app.control.purge()
