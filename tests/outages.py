"""A Redis that is down, for tests of what happens without the cache."""

import socket


def dead_redis_url():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"  # nothing listens there once the socket closes


def dead_redis_caches():
    """CACHES for override_settings: the project's Redis cache settings, on a dead port."""
    return {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": dead_redis_url(),
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }
