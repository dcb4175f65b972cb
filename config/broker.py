"""kombu's Redis transport, with a channel that survives being closed after its connection
was collected (docs/decisions/hardening.md "11. A Redis restart must not end a worker").

When the worker loses Redis, celery 5.7's consumer (`on_connection_error_after_connected`)
first collects the broken connection, then closes it. `Connection.collect()` closes the
default channel and detaches the transport from the connection (`transport.client = None`);
but when that first close fails half-way (a pending BRPOP read raises ConnectionError before
the channel is marked closed), the channel stays open, and the `close()` that follows closes
it again. Closing a channel that holds unacknowledged messages (late acks, countdowns) restores
them to Redis through a new client, built from `transport.client`, now None: AttributeError
("'NoneType' object has no attribute 'hostname'"), which is not a connection error, so celery
reports it as unrecoverable and the worker exits (kombu 5.7.0, celery 5.7.0).

Here a channel whose transport was detached refuses to open a client with the transport's own
connection error: the close is then a failed close of a lost connection, which celery ignores
before it reconnects. The unacknowledged messages stay where Redis keeps them (its `unacked`
hash, restored by any worker after the visibility timeout) or, if Redis came back empty, are
re-queued by the webhook sweeper (docs/design.md "Webhooks"), as when the restore fails
because Redis is down, which is what happens when the first close succeeds.
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
