"""Worker heartbeats: whether some worker consumes each queue (docs/decisions/health.md "Worker
heartbeats (one per queue)").

Redis keeps a message until a worker takes it (`expires` only makes the worker discard it), so
beat sends a queue's next heartbeat only once the previous one was taken or expired: a queue
nobody consumes holds at most one heartbeat per expiry period.
"""

import math
import time

from celery import shared_task
from django.core.cache import cache

WORKER_HEARTBEAT_TASK = "health.worker_heartbeat"


def _heartbeat_key(queue: str) -> str:
    return f"health:worker:{queue}"


def _in_flight_key(queue: str) -> str:
    return f"health:worker:{queue}:in_flight"


def worker_heartbeat_record(queue: str):
    # No expiry: /status tells "silent for N seconds" apart from "never seen".
    cache.set(_heartbeat_key(queue), time.time(), timeout=None)
    # Taken from the queue: beat may send the next one.
    cache.delete(_in_flight_key(queue))


def worker_heartbeat_last(queue: str):
    """Unix time a worker last took a heartbeat from `queue`, or None if none was recorded."""
    return cache.get(_heartbeat_key(queue))


def worker_heartbeat_claim(queue: str, expires: float) -> bool:
    """Beat's side: True when no heartbeat sent to `queue` is still waiting there (taken, or
    expired after `expires` seconds), and marks the one about to be sent as waiting."""
    # Whole seconds: the Redis cache truncates a fractional timeout (0.5 would mean 0).
    return cache.add(_in_flight_key(queue), time.time(), timeout=max(1, math.ceil(expires)))


@shared_task(name=WORKER_HEARTBEAT_TASK)
def worker_heartbeat_task(queue: str):
    worker_heartbeat_record(queue)
