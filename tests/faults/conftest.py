import os

import pytest

from tests.faults.harness import own_postgresql, run_sql
from tests.servers import ThrowawayRedis


@pytest.fixture
def redis_server(tmp_path):
    """A Redis of the test's own, which it may stop and start again (never the suite's)."""
    workdir = tmp_path / "redis"
    workdir.mkdir()
    server = ThrowawayRedis(workdir)
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="module")
def postgresql(django_db_setup, django_db_blocker):
    """The faults restart PostgreSQL: a module that uses this runs on a server of its own for
    all its tests, the suite's is never touched (tests/faults/harness.py `own_postgresql`)."""
    suite_started = run_sql(os.environ["DATABASE_URL"], "SELECT pg_postmaster_start_time()")
    with own_postgresql(django_db_blocker) as server:
        yield server
    # the suite's server was never restarted
    assert run_sql(os.environ["DATABASE_URL"], "SELECT pg_postmaster_start_time()") == suite_started
