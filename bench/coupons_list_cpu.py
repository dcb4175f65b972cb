"""Server time of one coupon-list request, in process, for this checkout and a `--compare` one.

The shared machine makes wrk's throughput swing by 2x between rounds; the fastest of many
timed repeats of the same request (Django test client, production settings, real PostgreSQL
and Redis) is far steadier. Run under bin/with-test-services:

    bin/with-test-services .venv/bin/python bench/coupons_list_cpu.py --compare /tmp/coupons-before

Each checkout is timed in its own process, alternating, `--rounds` times; the table gives the
median over rounds of each process's best time per request.
"""

import argparse
import statistics
import subprocess
from pathlib import Path

from coupons_list import REPO, bench_environment, seed

TIMING = """
import sys, timeit
import django
django.setup()
from django.test import Client
client = Client(HTTP_AUTHORIZATION="Bearer " + sys.argv[1], HTTP_HOST="127.0.0.1")
for label, url in URLS:
    assert client.get(url).status_code == 200
    best = min(timeit.repeat(lambda: client.get(url), number=20, repeat=15)) / 20
    print(label, best)
"""
# The shared API layer alone (auth + throttle + store permission), then the list at two sizes.
URLS = [
    ("ping-auth", "/bench/ping-auth"),
    ("limit=15", "/api/v1/coupons?limit=15"),
    ("limit=100", "/api/v1/coupons?limit=100"),
]


def time_checkout(repo: Path, key: str) -> dict[int, float]:
    env = bench_environment(repo)
    out = subprocess.run(
        [str(repo / ".venv" / "bin" / "python"), "-c", f"URLS = {URLS!r}\n{TIMING}", key],
        env={**env, "ALLOWED_HOSTS": "127.0.0.1"},
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {label: float(seconds) for label, seconds in map(str.split, out.splitlines())}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compare", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--coupons", type=int, default=1_000)
    args = parser.parse_args()
    key = seed(bench_environment(), args.coupons)
    checkouts = {"before": args.compare.resolve(), "after": REPO}
    best: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    for round_number in range(args.rounds):
        names = list(checkouts) if round_number % 2 == 0 else list(reversed(checkouts))
        for name in names:
            best[name].append(time_checkout(checkouts[name], key))
    print("| request | before (ms) | after (ms) | after / before time | per round |")
    print("|---|---|---|---|---|")
    for limit, _url in URLS:
        before = [r[limit] for r in best["before"]]
        after = [r[limit] for r in best["after"]]
        per_round = ", ".join(f"{a / b:.2f}" for a, b in zip(after, before, strict=True))
        ratio = statistics.median(after) / statistics.median(before)
        print(
            f"| {limit} | {statistics.median(before) * 1000:.2f} "
            f"| {statistics.median(after) * 1000:.2f} | {ratio:.2f} | {per_round} |"
        )


if __name__ == "__main__":
    main()
