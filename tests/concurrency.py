"""Races run with real threads against the real PostgreSQL."""

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import connection

T = TypeVar("T")


def run_at_once(
    task: Callable[[], T], count: int, *, timeout: float = 60
) -> list[T | BaseException]:
    """Run task() in `count` threads released together by a barrier; return, in thread order,
    what each returned or raised.

    Only real threads make PostgreSQL's row locks and unique constraints race. Django opens one
    connection per thread, so each thread closes its own: a left-open one blocks dropping the
    test database.
    """
    barrier = threading.Barrier(count)
    outcomes: list[T | BaseException] = [None] * count  # type: ignore[list-item]

    def run(index: int) -> None:
        try:
            barrier.wait(timeout)
            outcomes[index] = task()
        except BaseException as error:
            outcomes[index] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    stuck = sum(thread.is_alive() for thread in threads)
    assert not stuck, f"{stuck} of {count} threads did not finish within {timeout} s"
    return outcomes
