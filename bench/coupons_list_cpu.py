"""Server time of one coupon-list request, in process: ours against the stock DRF peer, and
optionally against a `--compare` checkout of the code.

The shared machine makes wrk's throughput swing widely between rounds; the fastest of many
timed repeats of the same request (Django test client, production settings, real PostgreSQL
and Redis) is far steadier. Run under bin/with-test-services:

    bin/with-test-services .venv/bin/python bench/coupons_list_cpu.py
    bin/with-test-services .venv/bin/python bench/coupons_list_cpu.py --compare /tmp/coupons-before
    bin/with-test-services .venv/bin/python bench/coupons_list_cpu.py --compare . \
        --options '{"server_side_binding": true, "prepare_threshold": 0}'

`--options` adds a JSON object to the database's OPTIONS of this checkout's processes only
(bench/coupons_settings.py): with `--compare .` it times a driver option against the same code.

Each round times every request in a fresh process, the requests in alternating order (ours
before the peer's, then after); each checkout is timed in its own process, alternating too.
The tables give the median over `--rounds` of each process's best time per request. With
`--cpu` the time is CPU time, of the Django process and of its PostgreSQL backend: under load
from other processes, wall time swings more than the differences measured here.
"""

import argparse
import statistics
from pathlib import Path

from coupons_list import (
    CPU_PER_REQUEST,
    PEER_PATH,
    PEER_TARGETS,
    REPO,
    bench_environment,
    run_timing_in,
    seed,
)

TIMING = """
import sys, timeit
import django
django.setup()
from django.test import Client
client = Client(HTTP_HOST="127.0.0.1")
headers = {"ours": "Bearer " + sys.argv[1], "peer": "Token " + sys.argv[2]}
for label, url, credential in URLS:
    auth = {"HTTP_AUTHORIZATION": headers[credential]}
    get = lambda: client.get(url, **auth)
    # Two untimed requests first: the credential's identity is then kept and current.
    assert get().status_code == 200 and get().status_code == 200, url
    if CPU:
        print(label, min(cpu_per_request(get, 20) for _ in range(15)))
    else:
        print(label, min(timeit.repeat(get, number=20, repeat=15)) / 20)
"""
# The trivial view (plain Django, every middleware), the shared API layer alone (auth +
# throttle + store permission), then the list at two sizes beside the peer's.
URLS = [
    ("ping", "/bench/ping", "ours"),
    ("ping-auth", "/bench/ping-auth", "ours"),
    ("limit=15", "/api/v1/coupons?limit=15", "ours"),
    ("peer-15", f"{PEER_PATH}?page_size=15", "peer"),
    ("limit=100", "/api/v1/coupons?limit=100", "ours"),
    ("peer-100", f"{PEER_PATH}?page_size=100", "peer"),
]


# The targets: the throughput each request keeps of the trivial view's, in CPU per request.
TRIVIAL_TARGETS = {"ping-auth": "50%", "limit=15": "33%"}


def time_checkout(
    repo: Path, key: str, token: str, urls: list, cpu: bool, options: str | None = None
) -> dict[str, float]:
    script = f"URLS = {urls!r}\nCPU = {cpu}\n{CPU_PER_REQUEST}\n{TIMING}"
    env = {"BENCH_DATABASE_OPTIONS": options} if options else None
    return run_timing_in(repo, script, key, token, env=env)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compare", type=Path, help="a checkout of the code before a change")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--options", help="JSON added to the database OPTIONS of 'after' only")
    parser.add_argument("--coupons", type=int, default=1_000)
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="CPU time of the Django process and its PostgreSQL backend instead of wall time",
    )
    args = parser.parse_args()
    key, token = seed(bench_environment(), args.coupons)
    checkouts = {"after": REPO}
    if args.compare:
        checkouts = {"before": args.compare.resolve(), **checkouts}
    best: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    for round_number in range(args.rounds):
        forward = round_number % 2 == 0
        names = list(checkouts) if forward else list(reversed(checkouts))
        urls = URLS if forward else list(reversed(URLS))
        for name in names:
            # An older checkout has no peer view: time only our requests there.
            wanted = urls if name == "after" else [u for u in urls if u[2] == "ours"]
            options = args.options if name == "after" else None
            best[name].append(time_checkout(checkouts[name], key, token, wanted, args.cpu, options))
    measure = "CPU time (Django + PostgreSQL backend)" if args.cpu else "wall time"
    print(
        f"{args.coupons} coupons; {measure}, median over {args.rounds} rounds of best-of-15 x 20\n"
    )
    print("| request | ms (median) | per round (ms) |")
    print("|---|---|---|")
    for label, _url, _credential in URLS:
        times = [r[label] * 1000 for r in best["after"]]
        rounds = ", ".join(f"{t:.2f}" for t in times)
        print(f"| {label} | {statistics.median(times):.2f} | {rounds} |")
    print("\n| page size | peer time / our time (= our req/s / peer's) | per round | target |")
    print("|---|---|---|---|")
    for size, target in PEER_TARGETS.items():
        mine = [r[f"limit={size}"] for r in best["after"]]
        theirs = [r[f"peer-{size}"] for r in best["after"]]
        per_round = ", ".join(f"{p / m:.2f}" for m, p in zip(mine, theirs, strict=True))
        ratio = statistics.median(theirs) / statistics.median(mine)
        print(f"| {size} | {ratio:.2f} | {per_round} | {target} |")
    print("\n| request | share of the trivial view (ping time / its time) | per round | target |")
    print("|---|---|---|---|")
    for label, target in TRIVIAL_TARGETS.items():
        ping = [r["ping"] for r in best["after"]]
        mine = [r[label] for r in best["after"]]
        per_round = ", ".join(f"{p / m:.0%}" for p, m in zip(ping, mine, strict=True))
        share = statistics.median(ping) / statistics.median(mine)
        print(f"| {label} | {share:.0%} | {per_round} | {target} |")
    if args.compare:
        print("\n| request | before (ms) | after (ms) | after / before time | per round |")
        print("|---|---|---|---|---|")
        for label, _url, credential in URLS:
            if credential != "ours":
                continue
            before = [r[label] for r in best["before"]]
            after = [r[label] for r in best["after"]]
            per_round = ", ".join(f"{a / b:.2f}" for a, b in zip(after, before, strict=True))
            ratio = statistics.median(after) / statistics.median(before)
            print(
                f"| {label} | {statistics.median(before) * 1000:.2f} "
                f"| {statistics.median(after) * 1000:.2f} | {ratio:.2f} | {per_round} |"
            )


if __name__ == "__main__":
    main()
