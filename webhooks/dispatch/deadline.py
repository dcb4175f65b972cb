"""The time budget of one webhook attempt (docs/decisions/webhooks.md "Request").

An attempt has one budget, WEBHOOKS_TIMEOUT_SECONDS, for everything (DNS, connect, request,
response). Socket timeouts bound each operation, not their sum: a receiver trickling a byte every
few seconds would otherwise keep an attempt, and its lease, alive indefinitely. So the connections
an attempt uses are handed to its deadline (webhooks/dispatch/connection.py), and a watchdog thread
shuts them down when the budget is spent, which ends a blocked read at once."""

import contextlib
import heapq
import itertools
import os
import socket
import threading
import time

_attempt = threading.local()


class AttemptDeadline:
    """The time budget of one attempt; at its end the attempt's connections are shut down,
    which ends a blocked connect or read at once (the attempt then reports a timeout)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.ends_at = time.monotonic() + seconds
        self.expired = False
        self.finished = False
        self._connections: list = []
        self._lock = threading.Lock()

    def remaining(self) -> float:
        return max(0.0, self.ends_at - time.monotonic())

    def watch(self, connection) -> None:
        """`connection`: anything with a `sock` attribute (http.client's connections)."""
        with self._lock:
            self._connections.append(connection)
            if self.expired:
                _shut(connection)

    def expire(self) -> None:
        with self._lock:
            if self.finished:
                return  # too late: the connection may already serve the next attempt
            self.expired = True
            for connection in self._connections:
                _shut(connection)

    def __enter__(self) -> "AttemptDeadline":
        _attempt.deadline = self
        _watchdog.watch(self)
        return self

    def __exit__(self, *exc_info) -> None:
        with self._lock:
            self.finished = True
        _attempt.deadline = None


def current_deadline() -> AttemptDeadline | None:
    """The deadline of the attempt this thread runs, if any."""
    return getattr(_attempt, "deadline", None)


class _Watchdog:
    """Expires attempt deadlines: one thread per process, started on first use, instead of a
    timer thread per attempt (starting one costs about as much as a fast attempt's claim)."""

    def __init__(self):
        self._condition = threading.Condition()
        self._deadlines: list[tuple[float, int, AttemptDeadline]] = []  # a heap by end time
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def watch(self, deadline: AttemptDeadline) -> None:
        with self._condition:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="webhooks-attempt-watchdog", daemon=True
                )
                self._thread.start()
            heapq.heappush(self._deadlines, (deadline.ends_at, next(self._order), deadline))
            if self._deadlines[0][2] is deadline:
                # Only an earlier end than the one it waits for needs waking it: waking the
                # thread on every attempt would cost the attempt a switch of the GIL.
                self._condition.notify()

    def _run(self) -> None:
        with self._condition:
            while True:
                while self._deadlines and self._deadlines[0][2].finished:
                    heapq.heappop(self._deadlines)
                if not self._deadlines:
                    self._condition.wait()
                    continue
                wait = self._deadlines[0][0] - time.monotonic()
                if wait > 0:
                    self._condition.wait(wait)
                    continue
                heapq.heappop(self._deadlines)[2].expire()


_watchdog = _Watchdog()


def _watchdog_reset() -> None:
    # A forked child (a Celery prefork worker) has no copy of the parent's thread, and the
    # parent's lock may have been held at fork time: it starts afresh.
    global _watchdog
    _watchdog = _Watchdog()


os.register_at_fork(after_in_child=_watchdog_reset)


def _shut(connection) -> None:
    sock = getattr(connection, "sock", None)
    if sock is None:
        return
    # socket.socket's own shutdown: on a TLS socket it ends the blocked read without tearing
    # down the TLS state under the reading thread.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
