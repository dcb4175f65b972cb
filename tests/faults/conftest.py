import pytest

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
