"""Celery beat that schedules only while it holds a lock, and records a heartbeat each tick, so
two beats started by mistake do not send every periodic task twice: a Redis lock (SET NX with
an expiry, renewed each tick), or without Redis a file flock (docs/decisions/health.md "Beat
lock").
"""

import fcntl
import logging
import time

from celery.beat import PersistentScheduler
from django.conf import settings
from django.core.cache import cache

from core.operations.worker_heartbeat import WORKER_HEARTBEAT_TASK, worker_heartbeat_claim

logger = logging.getLogger(__name__)

BEAT_LOCK_KEY = "storefront:beat:lock"
BEAT_HEARTBEAT_CACHE_KEY = "health:beat:heartbeat"


class RedisBeatLock:
    def __init__(self, redis_url: str, ttl_seconds: float):
        import redis

        timeout = settings.HEALTH_CHECK_TIMEOUT_SECONDS
        client = redis.Redis.from_url(
            redis_url, socket_connect_timeout=timeout, socket_timeout=timeout
        )
        # thread_local=False: beat may renew from another thread than the one that acquired.
        self._lock = client.lock(
            BEAT_LOCK_KEY, timeout=ttl_seconds, blocking=False, thread_local=False
        )

    def hold(self) -> bool:
        """Acquires the lock, or renews it to a full TTL when this beat already holds it."""
        if self._lock.local.token is not None:
            try:
                self._lock.reacquire()
                return True
            except Exception:
                # LockNotOwnedError (expired and taken) or Redis unreachable: not ours now.
                self._lock.local.token = None
        return bool(self._lock.acquire())

    def release(self):
        if self._lock.local.token is not None:
            try:
                self._lock.release()
            except Exception:
                logger.warning("beat: could not release the scheduling lock", exc_info=True)


class FileBeatLock:
    def __init__(self, path):
        self._path = path
        self._file = None

    def hold(self) -> bool:
        if self._file is not None:
            return True
        self._path.parent.mkdir(parents=True, exist_ok=True)
        lock_file = open(self._path, "a")  # noqa: SIM115 (held open while this beat schedules)
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock_file.close()
            return False
        self._file = lock_file
        return True

    def release(self):
        if self._file is not None:
            self._file.close()
            self._file = None


def beat_lock():
    if settings.REDIS_URL:
        return RedisBeatLock(settings.REDIS_URL, settings.BEAT_LOCK_SECONDS)
    return FileBeatLock(settings.VAR_DIR / "beat.lock")


def beat_heartbeat_record():
    # No expiry: /status tells "silent for N seconds" apart from "never seen".
    cache.set(BEAT_HEARTBEAT_CACHE_KEY, time.time(), timeout=None)


def beat_heartbeat_last():
    """Unix time of the last tick of the scheduling beat, or None if none was recorded."""
    return cache.get(BEAT_HEARTBEAT_CACHE_KEY)


class LockedScheduler(PersistentScheduler):
    """PersistentScheduler (the schedule file of `--schedule`) that ticks only under the lock."""

    def __init__(self, *args, **kwargs):
        self.lock = beat_lock()
        self.scheduling = False
        super().__init__(*args, **kwargs)

    def tick(self, *args, **kwargs):
        interval = settings.BEAT_HEARTBEAT_SECONDS
        try:
            holds = self.lock.hold()
        except Exception:
            logger.warning("beat: scheduling lock unavailable; standing by", exc_info=True)
            holds = False
        if holds != self.scheduling:
            self.scheduling = holds
            if holds:
                logger.info("beat: holds the scheduling lock; scheduling")
            else:
                logger.warning("beat: another beat holds the scheduling lock; standing by")
        if not holds:
            return interval
        try:
            beat_heartbeat_record()
        except Exception:
            logger.warning("beat: could not record the heartbeat", exc_info=True)
        # Wake at least once per interval, to renew the lock well before it expires.
        return min(super().tick(*args, **kwargs), interval)

    def apply_async(self, entry, producer=None, advance=True, **kwargs):
        if entry.task == WORKER_HEARTBEAT_TASK and not worker_heartbeat_claim(
            entry.options["queue"], entry.options["expires"]
        ):
            # The previous heartbeat still waits on that queue: another would only pile up.
            return None
        return super().apply_async(entry, producer=producer, advance=advance, **kwargs)

    def close(self):
        try:
            super().close()
        finally:
            self.lock.release()
