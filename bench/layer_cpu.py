"""Server time of the shared API layer, in process, for this checkout and a `--compare` one.

The layer every endpoint pays for (key authentication, throttle, store permission) is
`/bench/ping-auth`; `/bench/ping` is the trivial view it is reported against (the target:
ping-auth at >= 50% of the trivial view's throughput, i.e. ping time / ping-auth time >= 0.50).
The timed requests follow two untimed ones, so the credential's identity is
kept and current (accounts/identity.py): the steady state.
The event poll and the deliveries list show the effect on real endpoints. Run under
bin/with-test-services (see docs/benchmarks/layer.md):

    bin/with-test-services .venv/bin/python bench/layer_cpu.py --compare ../storefront-before

(`--compare`: a checkout of the code to compare with, with its own `.venv`.)

Each checkout is timed in its own process (Django test client, production settings, real
PostgreSQL and Redis), alternating which goes first, `--rounds` times; each figure is the
median over rounds of the best per-request time of `--repeat` batches of 20 requests.

`--cpu` times CPU instead of the clock: the Django process's and its PostgreSQL backend's
(its /proc schedstat) per request, best of `--repeat` batches of 100. On a host whose other load
comes and goes, waiting for a core inflates the clock but not the CPU a request uses; when the
host is saturated, throughput is the inverse of that CPU time. Set DATABASE_CONN_MAX_AGE=3600
so that each process keeps one PostgreSQL backend.
"""

import argparse
import statistics
from pathlib import Path

from coupons_list import CPU_PER_REQUEST, REPO, bench_environment, run_timing_in, seed

TIMING = """
import sys, timeit
import django
django.setup()
from django.test import Client
client = Client(HTTP_AUTHORIZATION="Bearer " + sys.argv[1], HTTP_HOST="127.0.0.1")
"""
TIMING += CPU_PER_REQUEST
TIMING += """
for label, url, headers in URLS:
    get = lambda: client.get(url, headers=headers)
    assert get().status_code == 200 and get().status_code == 200, url
    if CPU:
        print(label, min(cpu_per_request(get, 100) for _ in range(REPEAT)))
    else:
        print(label, min(timeit.repeat(get, number=20, repeat=REPEAT)) / 20)
"""
URLS = [
    ("ping", "/bench/ping", {}),
    ("ping-auth", "/bench/ping-auth", {}),
    ("ping-auth X-STORE", "/bench/ping-auth", {"X-STORE": "bench-store"}),
    ("events poll", "/api/v2/events?limit=15", {}),
    ("deliveries list", "/api/v2/webhook-deliveries?limit=15", {}),
]


def time_checkout(repo: Path, key: str, repeat: int, cpu: bool) -> dict[str, float]:
    script = f"URLS = {URLS!r}\nREPEAT = {repeat}\nCPU = {cpu}\n{TIMING}"
    return run_timing_in(repo, script, key)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compare", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--coupons", type=int, default=100)
    parser.add_argument("--cpu", action="store_true", help="CPU per request, not the clock")
    args = parser.parse_args()
    key, _peer_token = seed(bench_environment(), args.coupons)
    checkouts = {"before": args.compare.resolve(), "after": REPO}
    best: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    for round_number in range(args.rounds):
        names = list(checkouts) if round_number % 2 == 0 else list(reversed(checkouts))
        for name in names:
            best[name].append(time_checkout(checkouts[name], key, args.repeat, args.cpu))
    print("| request | before (ms) | after (ms) | after / before time | per round |")
    print("|---|---|---|---|---|")
    for label, _url, _headers in URLS:
        before = [r[label] for r in best["before"]]
        after = [r[label] for r in best["after"]]
        per_round = ", ".join(f"{a / b:.2f}" for a, b in zip(after, before, strict=True))
        print(
            f"| {label} | {statistics.median(before) * 1000:.3f} "
            f"| {statistics.median(after) * 1000:.3f} "
            f"| {statistics.median(after) / statistics.median(before):.2f} | {per_round} |"
        )
    for name in checkouts:
        # The target's ratio, per round (ping and ping-auth timed in the same process).
        shares = [r["ping"] / r["ping-auth"] for r in best[name]]
        print(
            f"{name}: ping-auth throughput share of ping = {statistics.median(shares):.0%} "
            f"(rounds: {', '.join(f'{s:.0%}' for s in shares)})"
        )


if __name__ == "__main__":
    main()
