"""CPU of one step of every API request, in process, against its alternative in the same run
(docs/benchmarks/layer.md): the rate limit's Redis round trip
(`core.api.ratelimit.rate_limit_consume` with two epoch keys, as a store request with a kept
identity makes it) with redis-py's hiredis reply parser and command packer, and with its
pure-Python ones (hiredis hidden from the process). Also DRF's content negotiation of a request
without an Accept header, the cost a shortcut of it could save.

    bin/with-test-services .venv/bin/python bench/layer_steps.py --rounds 4

Each round runs one process with hiredis and one without, alternating which goes first; each
figure is the best of 15 batches of 2,000 calls (`time.process_time`), the tables give the
median over rounds.
"""

import argparse
import statistics
import subprocess
import sys

from coupons_list import REPO, bench_environment

TIMING = """
import sys, time
if HIDE_HIREDIS:
    sys.modules["hiredis"] = None  # `import hiredis` fails: redis-py uses its Python parser
import django
django.setup()
import redis.utils
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory
from core.api.ratelimit import rate_limit_consume
assert redis.utils.HIREDIS_AVAILABLE is not HIDE_HIREDIS


def best_us(call):
    batches = []
    for _ in range(15):
        started = time.process_time()
        for _ in range(2000):
            call()
        batches.append((time.process_time() - started) / 2000 * 1e6)
    return min(batches)


# One Django request, its headers and query already read (as the middleware stack leaves
# them); a DRF Request of its own per call, as per API request (DRF keeps the parsed Accept
# header on it). The Request's construction alone is timed too and subtracted.
django_request = APIRequestFactory().get("/api/v1/coupons?limit=15")
django_request.headers, django_request.GET
renderers = [JSONRenderer()]
print("rate_limit_consume", best_us(
    lambda: rate_limit_consume("bench", 10**9, epoch_keys=("epoch:a", "epoch:b"))))
wrapping = best_us(lambda: Request(django_request))
print("negotiation-drf", best_us(
    lambda: DefaultContentNegotiation().select_renderer(Request(django_request), renderers)
) - wrapping)
"""


def time_steps(hide_hiredis: bool) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", f"HIDE_HIREDIS = {hide_hiredis}\n{TIMING}"],
        env={**bench_environment(), "ALLOWED_HOSTS": "127.0.0.1"},
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {label: float(us) for label, us in (line.rsplit(" ", 1) for line in out.splitlines())}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    runs: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    for round_number in range(args.rounds):
        order = (False, True) if round_number % 2 == 0 else (True, False)
        for hide in order:
            runs[hide].append(time_steps(hide))
    print(f"CPU µs per call, median over {args.rounds} rounds of best-of-15 x 2,000\n")
    print("| step | µs (median) | per round |")
    print("|---|---:|---|")
    rows = [
        ("rate limit round trip, pure-Python parser", runs[True], "rate_limit_consume"),
        ("rate limit round trip, hiredis", runs[False], "rate_limit_consume"),
        ("negotiation, DRF's DefaultContentNegotiation", runs[False], "negotiation-drf"),
    ]
    for label, results, key in rows:
        values = [r[key] for r in results]
        per_round = ", ".join(f"{v:.1f}" for v in values)
        print(f"| {label} | {statistics.median(values):.1f} | {per_round} |")


if __name__ == "__main__":
    main()
