"""CPU per request of the anonymous endpoints, as a ratio to /healthz.

In-process through Django's test client (every middleware), best of ROUNDS rounds of N
requests each, CPU time of the whole process (the health checks run on their own threads).
Migrates the database of DATABASE_URL first. Run under bin/with-test-services, with the probe
limit out of the way (one address sends all the requests):

    HEALTH_RATE_LIMIT_PER_MINUTE=100000 bin/with-test-services .venv/bin/python \
        bench/anonymous_cpu.py

HEALTH_CHECK_RESULT_SECONDS=0 makes every probe run its checks (the cost of one run).

With another tree first on PYTHONPATH (e.g. an export of an earlier commit) it measures that.
"""

import os
import time

import django
from django.core.management import call_command
from django.test import Client

N = 20
ROUNDS = 5
PATHS = ["/healthz", "/api/schema/", "/readyz", "/status"]


def cpu_ms_per_request(client: Client, path: str) -> float:
    client.get(path)  # first request: imports, the schema's one build
    best = float("inf")
    for _ in range(ROUNDS):
        started = time.process_time()
        for _ in range(N):
            client.get(path)
        best = min(best, (time.process_time() - started) / N * 1000)
    return best


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
    django.setup()
    call_command("migrate", verbosity=0)
    client = Client(REMOTE_ADDR="127.0.0.1")
    results = {path: cpu_ms_per_request(client, path) for path in PATHS}
    trivial = results["/healthz"]
    for path, ms in results.items():
        print(f"{path:14} {ms:7.2f} ms CPU/request  {ms / trivial:6.1f} x /healthz")


if __name__ == "__main__":
    main()
