"""kombu's Redis transport, with a channel that survives being closed after its connection
was collected: a detached channel refuses to open a client with the transport's connection
error, which celery ignores before it reconnects, instead of an AttributeError that ends the
worker (docs/decisions/hardening.md "11. A Redis restart must not end a worker").
"""

from contextlib import contextmanager

from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError


class Channel(kombu_redis.Channel):
    @contextmanager
    def conn_or_acquire(self, client=None):
        if client is None and self.connection.client is None:
            raise RedisConnectionError("the broker connection was closed")
        with super().conn_or_acquire(client) as acquired:
            yield acquired


class Transport(kombu_redis.Transport):
    """Selected by CELERY_BROKER_TRANSPORT for a redis:// broker URL (config/settings/base.py)."""

    Channel = Channel
