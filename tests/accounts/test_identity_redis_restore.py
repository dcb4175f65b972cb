"""Epochs cannot go backwards in effect (accounts/identity.py, docs/decisions/identity.md): a
Redis restored from a snapshot taken before a revocation gives back the epochs a process kept
its identity under, and the process must still read the database, where the credential is
revoked. A real web process (gunicorn, production settings) on a Redis of this module's own,
which the test stops and starts again from its snapshot; the suite's Redis is not touched.
"""

import subprocess

import pytest
import requests
from django.db import connection
from django.test import override_settings

from accounts.identity import credential_epoch_key
from accounts.models import ApiKey
from accounts.services import api_key_revoke
from tests.factories import make_api_key
from tests.servers import Gunicorn, ThrowawayRedis, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def database_url() -> str:
    settings_dict = connection.settings_dict  # the test database
    return (
        f"postgres://{settings_dict['USER']}@{settings_dict['HOST']}:{settings_dict['PORT']}"
        f"/{settings_dict['NAME']}"
    )


@pytest.fixture(scope="module")
def module_redis(tmp_path_factory):
    """The Redis of this module's web process, which a test stops and starts from its snapshot."""
    server = ThrowawayRedis(tmp_path_factory.mktemp("identity-redis"))
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="module")
def web(module_redis, django_db_setup, django_db_blocker, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("identity-restore")
    with (
        django_db_blocker.unblock(),
        Gunicorn(
            workdir / "gunicorn.log",
            workers=1,
            DATABASE_URL=database_url(),
            REDIS_URL=module_redis.url,
            API_RATE_LIMIT_PER_MINUTE="100000",
            LOG_LEVEL="WARNING",
        ) as server,
    ):
        yield server


def caches_on(server: ThrowawayRedis) -> dict:
    """CACHES for override_settings: the project's Redis cache settings, on `server`."""
    return {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": server.url,
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }


@pytest.fixture
def on_own_redis(module_redis):
    """This process's cache is the web process's Redis: the epochs a revocation here deletes
    are the ones it reads."""
    with override_settings(CACHES=caches_on(module_redis)):
        yield


def redis_cli(server: ThrowawayRedis, *command: str) -> str:
    result = subprocess.run(
        ["redis-cli", "-p", str(server.port), *command],
        capture_output=True,
        check=True,
        text=True,
        timeout=10,
    )
    return result.stdout.strip()


PATH = "/api/v2/permissions"


def status(server: Gunicorn, secret: str) -> int:
    response = requests.get(
        f"{server.base}{PATH}",
        headers={"Authorization": f"Bearer {secret}", "Host": "127.0.0.1"},
        timeout=30,
    )
    return response.status_code


def test_a_redis_restored_from_before_a_revocation_does_not_revive_the_key(
    web, module_redis, on_own_redis, user, store
):
    # given: the web process keeps the key's identity (read, confirmed, answered from it)
    secret = make_api_key(user)
    assert [status(web, secret) for _ in range(3)] == [200, 200, 200]
    key = ApiKey.objects.get(user=user)
    epoch = redis_cli(module_redis, "GET", f":1:{credential_epoch_key(key.key_hash)}")
    assert epoch
    assert redis_cli(module_redis, "SAVE") == "OK"  # the snapshot, before the revocation

    # when: the key is revoked (its epoch deleted), then Redis comes back from the snapshot
    api_key_revoke(api_key=key)
    assert redis_cli(module_redis, "EXISTS", f":1:{credential_epoch_key(key.key_hash)}") == "0"
    module_redis.stop()
    module_redis.start()
    assert redis_cli(module_redis, "GET", f":1:{credential_epoch_key(key.key_hash)}") == epoch

    # then: the epochs the process kept the identity under are back, and still not trusted
    assert status(web, secret) == 401
    assert web.log_lines("Redis is another server process")


def test_a_live_key_is_served_across_a_restore(web, module_redis, on_own_redis, user, store):
    secret = make_api_key(user)
    assert [status(web, secret) for _ in range(3)] == [200, 200, 200]
    assert redis_cli(module_redis, "SAVE") == "OK"

    module_redis.stop()
    module_redis.start()

    assert [status(web, secret) for _ in range(3)] == [200, 200, 200]


def test_a_failover_to_a_replica_that_missed_the_revocation_does_not_revive_the_key(
    module_redis, tmp_path, user, store, client
):
    """In this process: the Redis it reads changes under it, as a failover makes it."""
    replica = ThrowawayRedis(tmp_path)
    replica.start()
    try:
        # given: an identity kept on the primary, whose epochs the replica has copied
        # the primary sends its first copy at once, not after waiting for more replicas
        redis_cli(module_redis, "CONFIG", "SET", "repl-diskless-sync-delay", "0")
        redis_cli(replica, "REPLICAOF", "127.0.0.1", str(module_redis.port))
        with override_settings(CACHES=caches_on(module_redis)):
            secret = make_api_key(user)
            for _ in range(3):
                assert client.get(PATH, HTTP_AUTHORIZATION=f"Bearer {secret}").status_code == 200
            key = ApiKey.objects.get(user=user)
            epoch_key = f":1:{credential_epoch_key(key.key_hash)}"
            epoch = redis_cli(module_redis, "GET", epoch_key)
            wait_for(
                lambda: redis_cli(replica, "GET", epoch_key) == epoch,
                timeout=10,
                what="the replica copied the epoch",
            )
            # when: the replica falls behind, the key is revoked on the primary only
            redis_cli(replica, "REPLICAOF", "NO", "ONE")
            api_key_revoke(api_key=key)
        # ...and the replica, which still has the epochs, takes over
        with override_settings(CACHES=caches_on(replica)):
            assert redis_cli(replica, "GET", epoch_key) == epoch
            # then
            assert client.get(PATH, HTTP_AUTHORIZATION=f"Bearer {secret}").status_code == 401
    finally:
        replica.close()
