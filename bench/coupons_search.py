"""Server time of a coupon search against the coupon list with the same rows (the goal: a
search costs no more than the list with the same rows), in process, as bench/coupons_list_cpu.py
times the list: Django test client, production settings, real PostgreSQL and Redis, the best
of 15 x 20 requests per process, the median over `--rounds` fresh processes, the requests in
alternating order. Run under bin/with-test-services:

    bin/with-test-services .venv/bin/python bench/coupons_search.py --cpu

Every search below lists the same rows as the list (the store's live coupons in id order):
an empty body (the list itself), a condition every row meets, and a condition and a sort
that every row meets. The table gives each one's time and its ratio to the list's.
"""

import argparse
import statistics

from coupons_list import (
    CPU_PER_REQUEST,
    REPO,
    REQUEST_CALLS,
    bench_environment,
    run_timing_in,
    seed,
)

TIMING = """
import timeit
for label, url, body in REQUESTS:
    call = call_of(url, body)
    first = call()
    assert first.status_code == 200, first.content
    if CPU:
        print(label, min(cpu_per_request(call, 20) for _ in range(15)))
    else:
        print(label, min(timeit.repeat(call, number=20, repeat=15)) / 20)
"""
EVERY_ROW = {"filters": [{"field": "id", "operator": ">=", "value": 1}]}
EVERY_ROW_SORTED = {
    "filters": [{"field": "type", "operator": "in", "value": ["AMOUNT", "PERCENTAGE"]}],
    "sort": [{"field": "id", "direction": "asc"}],
}


def requests_of(limit: int) -> list:
    return [
        (f"list-{limit}", f"/api/v1/coupons?limit={limit}", None),
        (f"search-empty-{limit}", f"/api/v1/coupons/search?limit={limit}", {}),
        (f"search-every-row-{limit}", f"/api/v1/coupons/search?limit={limit}", EVERY_ROW),
        (
            f"search-sorted-{limit}",
            f"/api/v1/coupons/search?limit={limit}",
            EVERY_ROW_SORTED,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--coupons", type=int, default=1_000)
    parser.add_argument("--cpu", action="store_true", help="CPU time (Django + its backend)")
    args = parser.parse_args()
    key, _ = seed(bench_environment(), args.coupons)
    requests = requests_of(15) + requests_of(100)
    runs = []
    for round_number in range(args.rounds):
        ordered = requests if round_number % 2 == 0 else list(reversed(requests))
        script = f"REQUESTS = {ordered!r}\nCPU = {args.cpu}\n"
        runs.append(run_timing_in(REPO, script + REQUEST_CALLS + CPU_PER_REQUEST + TIMING, key))
    measure = "CPU time (Django + PostgreSQL backend)" if args.cpu else "wall time"
    print(
        f"{args.coupons} coupons; {measure}, median over {args.rounds} rounds of best-of-15 x 20\n"
    )
    print("| request | ms (median) | / list's time (median of rounds) | per round |")
    print("|---|---|---|---|")
    for label, _url, _body in requests:
        limit = label.rsplit("-", 1)[1]
        times = [run[label] for run in runs]
        ratios = [run[label] / run[f"list-{limit}"] for run in runs]
        print(
            f"| {label} | {statistics.median(times) * 1000:.2f} | {statistics.median(ratios):.2f} "
            f"| {', '.join(f'{r:.2f}' for r in ratios)} |"
        )


if __name__ == "__main__":
    main()
