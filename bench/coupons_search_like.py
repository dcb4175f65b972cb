"""A coupon search with 50 distinct `like` patterns over a store of 3,000 coupons, against the
coupon list of the same store (the reference, in the same process), wall time per request:
Django test client, production settings, real PostgreSQL and Redis. With `--compare DIR` (a
checkout of the code before a change, with its own `.venv`) the same requests run with that
code too, on the same database, in the same run. Run under bin/with-test-services:

    bin/with-test-services .venv/bin/python bench/coupons_search_like.py --compare DIR

`like-50`: 50 patterns, each with both wildcards (`_` and `%`). `like-50-at-bounds`: 50
patterns at the search's bounds (100 characters, 10 `%` each), the most a search may ask of
LIKE. The list and each search are timed best of `--repeat` requests, in a fresh process per
checkout and round.
"""

import argparse
import statistics
from pathlib import Path

from coupons_list import REPO, REQUEST_CALLS, bench_environment, run_timing_in, seed

TIMING = """
import time
for label, url, body in REQUESTS:
    call = call_of(url, body)
    best = None
    for _ in range(REPEAT):
        started = time.perf_counter()
        response = call()
        took = time.perf_counter() - started
        assert response.status_code == 200, response.content
        best = took if best is None else min(best, took)
    print(label, best)
"""


def like_filters(patterns: list[str]) -> dict:
    return {
        "filters": [
            {"type": "or", "field": "code", "operator": "like", "value": pattern}
            for pattern in patterns
        ]
    }


# The seed's codes are BENCH00000 to BENCH02999.
LIKE_50 = like_filters([f"B_NCH%{n:02d}" for n in range(50)])
AT_BOUNDS = like_filters(
    ["%" + "%".join(f"{n:02d}{'x' * 7}" for _ in range(9)) + "%" + "y" * 9 for n in range(50)]
)
REQUESTS = [
    ("list", "/api/v1/coupons?limit=15", None),
    ("like-50", "/api/v1/coupons/search?limit=15", LIKE_50),
    ("like-50-at-bounds", "/api/v1/coupons/search?limit=15", AT_BOUNDS),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compare", type=Path, help="a checkout of the code before")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--coupons", type=int, default=3_000)
    args = parser.parse_args()
    assert all(len(p["value"]) == 100 for p in AT_BOUNDS["filters"])
    key, _ = seed(bench_environment(), args.coupons)
    checkouts = {"after": REPO, **({"before": args.compare} if args.compare else {})}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    for _ in range(args.rounds):
        for name, repo in checkouts.items():
            script = f"REQUESTS = {REQUESTS!r}\nREPEAT = {args.repeat}\n"
            runs[name].append(run_timing_in(repo, script + REQUEST_CALLS + TIMING, key))
    print(
        f"{args.coupons} coupons; wall time, median over {args.rounds} rounds of the best of "
        f"{args.repeat} requests\n"
    )
    print("| request | " + " | ".join(f"{name} (s)" for name in checkouts) + " |")
    print("|---|" + "---:|" * len(checkouts))
    for label, _url, _body in REQUESTS:
        cells = []
        for name in checkouts:
            times = [run[label] for run in runs[name]]
            rounds = ", ".join(f"{t:.3f}" for t in times)
            cells.append(f"{statistics.median(times):.3f} ({rounds})")
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
