"""Pieces of the Redis fault tests: a paced load client that records every answer, a browser
signing in, and the suite's Celery worker on a Redis of the test's own
(tests.servers.ThrowawayRedis, the `redis_server` fixture of tests/faults/conftest.py).

Everything listens on 127.0.0.1 and every loop is bounded by a deadline.
"""

import contextlib
import re
import threading
import time
from dataclasses import dataclass, field

import requests

from tests.webhooks.helpers import CeleryWorker

# --- load -----------------------------------------------------------------------------------


@dataclass
class Answer:
    """One request of the load: when it started and ended (time.time()), what it was, and
    what came back (status None: no HTTP answer at all)."""

    started: float
    ended: float
    operation: str
    status: int | None
    rate_limit_headers: bool = False
    detail: dict = field(default_factory=dict)


class AnswerLog:
    def __init__(self):
        self.lock = threading.Lock()
        self.answers: list[Answer] = []

    def add(self, answer: Answer) -> None:
        with self.lock:
            self.answers.append(answer)

    def all(self) -> list[Answer]:
        with self.lock:
            return list(self.answers)


def timed(log: AnswerLog, operation: str, send, describe=None) -> requests.Response | None:
    """Runs `send()` (a requests call), records its answer (with `describe(response)` as its
    detail), returns the response (None when no HTTP answer came)."""
    started = time.time()
    try:
        response = send()
    except requests.RequestException as error:
        log.add(Answer(started, time.time(), operation, None, detail={"error": repr(error)}))
        return None
    log.add(
        Answer(
            started,
            time.time(),
            operation,
            response.status_code,
            rate_limit_headers="X-RateLimit-Limit" in response.headers,
            detail=describe(response) if describe else {},
        )
    )
    return response


class PacedLoop(threading.Thread):
    """Calls `step(number)` at most `rate` times a second until `stop` is set (or the
    deadline passes): paced without catching up, so a slow answer never makes a burst."""

    def __init__(self, step, rate: float, stop: threading.Event, deadline_seconds: float):
        super().__init__(daemon=True)
        self.step = step
        self.interval = 1.0 / rate
        self.stop_event = stop
        self.deadline = time.monotonic() + deadline_seconds
        self.error: BaseException | None = None

    def run(self):
        number = 0
        try:
            while not self.stop_event.is_set() and time.monotonic() < self.deadline:
                began = time.monotonic()
                self.step(number)
                number += 1
                self.stop_event.wait(max(0.0, self.interval - (time.monotonic() - began)))
        except BaseException as error:  # reported by the test, not lost in the thread
            self.error = error


CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


class SignInBrowser:
    """A browser on one sign-in page that loads the page, then submits the form; both answers
    are recorded. While the page itself answers 503 it still submits the form, as a person who
    opened the page just before the outage would: with its CSRF cookie's secret as the token
    (Django accepts the unmasked secret; the form's own token went stale when the previous
    sign-in rotated the cookie). After each sign-in it forgets its session, so every try starts
    signed out."""

    def __init__(self, log: AnswerLog, base: str, path: str, username: str, password: str):
        self.log, self.base, self.path = log, base, path
        self.credentials = {"username": username, "password": password}
        self.browser = requests.Session()
        self.token: str | None = None

    def __call__(self) -> None:
        path, log = self.path, self.log
        page = timed(log, f"GET {path}", lambda: self.browser.get(self.base + path, timeout=30))
        if page is not None and page.status_code == 200:
            token = CSRF_FIELD.search(page.text)
            assert token, f"no CSRF field on {path}"
            self.token = token.group(1)
        elif "csrftoken" in self.browser.cookies:
            self.token = self.browser.cookies["csrftoken"]
        if self.token is None:
            return
        started = time.time()
        try:
            response = self.browser.post(
                self.base + path,
                data={"csrfmiddlewaretoken": self.token, **self.credentials},
                allow_redirects=False,
                timeout=30,
            )
        except requests.RequestException as error:
            log.add(Answer(started, time.time(), f"POST {path}", None, detail={"e": repr(error)}))
            return
        log.add(
            Answer(
                started,
                time.time(),
                f"POST {path}",
                response.status_code,
                detail={
                    "retry_after": response.headers.get("Retry-After"),
                    "unavailable_page": "Sign-in is temporarily unavailable" in response.text,
                    "session_cookie": "sessionid" in response.cookies,
                },
            )
        )
        self.browser.cookies.pop("sessionid", None)


@contextlib.contextmanager
def running(threads: list[PacedLoop], stop: threading.Event):
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)


# --- worker -----------------------------------------------------------------------------------


class WorkerOnRedis(CeleryWorker):
    """The suite's worker fixture class (test settings, compressed webhook timings, embedded
    beat unless `beat` is False), on the test's own Redis: broker and cache."""

    def __init__(self, log_dir, redis_url: str, *, beat: bool = True):
        super().__init__(log_dir, concurrency=2, beat=beat)
        self.redis_url = redis_url

    def env(self) -> dict:
        return {
            **super().env(),
            "REDIS_URL": self.redis_url,
            "STOREFRONT_TEST_CACHE_URL": self.redis_url,  # as the web processes' cache
            "PROMETHEUS_MULTIPROC_DIR": str(self.log_dir / "prometheus-worker"),
        }
