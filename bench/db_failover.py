"""What core/database/connections.py's handling of connections the server ended costs a request,
against a
`SELECT 1` round trip on the same connection measured in the same run (what Django's
CONN_HEALTH_CHECKS would add to each request that reuses a connection).

- the check at each request's start (`close_connections_the_server_ended`: one poll() per open
  connection), on a healthy idle connection;
- a query through ReadFailoverMiddleware's execute wrapper (a safe request's queries), against
  the same query without it: this process's CPU time, the server's part being the same.

Run under bin/with-test-services (docs/benchmarks/faults-postgresql.md):

    bin/with-test-services .venv/bin/python bench/db_failover.py

Each figure is the best of `--repeat` batches of `--number` calls, per call.
"""

import argparse
import os
import sys
import time
import timeit
from pathlib import Path

# This checkout's config, not the one the virtualenv was installed from.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

import django

django.setup()

from django.db import connection  # noqa: E402

from core.database.connections import close_connections_the_server_ended  # noqa: E402


def best(function, number: int, repeat: int, timer=time.perf_counter) -> float:
    return min(timeit.repeat(function, number=number, repeat=repeat, timer=timer)) / number


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    cursor = connection.cursor()
    session = connection.connection

    def round_trip():
        cursor.execute("SELECT 1")
        cursor.fetchone()

    def watch(execute, sql, params, many, context):
        try:
            return execute(sql, params, many, context)
        except Exception:
            raise

    round_trip()
    # Alternated, best of each: the host's other load comes and goes.
    select_1 = check = plain_cpu = wrapped_cpu = float("inf")
    for _ in range(args.repeat):
        select_1 = min(select_1, best(round_trip, args.number, 1))
        check = min(check, best(close_connections_the_server_ended, args.number, 1))
        # CPU of this process (the server's time is the same query either way); the wrapper
        # entered once, as the middleware does for a request, around every query of it
        plain_cpu = min(plain_cpu, best(round_trip, args.number, 1, time.process_time))
        with connection.execute_wrapper(watch):
            wrapped_cpu = min(wrapped_cpu, best(round_trip, args.number, 1, time.process_time))
    assert connection.connection is session, "the check closed a healthy connection"

    print(f"SELECT 1 round trip (reference):     {select_1 * 1e6:8.1f} µs")
    print(
        f"check at a request's start:          {check * 1e6:8.1f} µs "
        f"({check / select_1:.3f} of the round trip)"
    )
    print(
        f"SELECT 1, this process's CPU:        {plain_cpu * 1e6:8.1f} µs; with the read failover "
        f"watch {wrapped_cpu * 1e6:.1f} µs ({wrapped_cpu / plain_cpu:.3f})"
    )


if __name__ == "__main__":
    main()
