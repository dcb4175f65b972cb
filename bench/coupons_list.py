"""Coupon-list throughput against gunicorn with production settings, beside a trivial JSON view.

Run against throwaway PostgreSQL and Redis (see docs/benchmarks/coupons.md):

    bin/with-test-services .venv/bin/python bench/coupons_list.py

Migrates the database, seeds one store with 1,000 coupons and an all-abilities API key, starts
gunicorn on 127.0.0.1 (settings `bench.coupons_settings` = production settings plus reference
views), and runs `wrk` (installed with apt-get when missing) against, in interleaved rounds:

- `GET /bench/ping`: trivial JSON view, the stack's baseline;
- `GET /bench/ping-auth`: the same through DRF with the coupon views' auth/throttle/permission;
- `GET /api/v1/coupons?limit=15` and `?limit=100`;
- the peer, stock DRF's version of the same list (bench/coupons_urls.py), at
  `?page_size=15` and `?page_size=100`; checked first to return the same coupons and total.

Each round alternates the order of the endpoints (so of ours and the peer's); the last table
gives ours / peer's req/s, medians and per round, against the targets (`PEER_TARGETS`).
`--only-peer` measures just the two lists and the peer.

With `--compare DIR` (a checkout of the code before a change, with its own `.venv`), a second
gunicorn serves that checkout from the same database, and every round measures each endpoint
on both, alternating which goes first; the table then gives the after/before ratio of the
medians. The machine is shared and noisy: compare ratios, not absolute figures.

It also times, in process, rendering one page of 100 coupons by the serializer's hand-built
`to_representation` and by DRF's per-field one (the justification of the former).

Load is bounded: fixed duration and connection count, loopback only. The per-credential rate
limit is raised out of the way (API_RATE_LIMIT_PER_MINUTE); the Redis counter is still used.
"""

import argparse
import json
import os
import re
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def bench_environment(repo: Path = REPO) -> dict[str, str]:
    for name in ("DATABASE_URL", "REDIS_URL"):
        if not os.environ.get(name):
            sys.exit(f"{name} is not set: run me under bin/with-test-services")
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="bench.coupons_settings",
        SECRET_KEY=secrets.token_urlsafe(38)[:50],
        # Production settings over plain HTTP on loopback: the hosts wrk calls, no redirect.
        ALLOWED_HOSTS="127.0.0.1,localhost",
        BASE_URL="https://api.example.com",
        SECURE_SSL_REDIRECT="false",
        API_RATE_LIMIT_PER_MINUTE="1000000000",
        LOG_LEVEL="WARNING",
        PYTHONPATH=str(repo),
    )
    return env


def run_timing_in(
    repo: Path, script: str, *args: str, env: dict[str, str] | None = None
) -> dict[str, float]:
    """Runs a timing `script` (it prints one `label seconds` line per request) with checkout
    `repo`'s code under the bench settings (and `env`), in a process of its own; seconds per
    label."""
    out = subprocess.run(
        [str(repo / ".venv" / "bin" / "python"), "-c", script, *args],
        env={**bench_environment(repo), "ALLOWED_HOSTS": "127.0.0.1", **(env or {})},
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {
        label: float(seconds)
        for label, seconds in (line.rsplit(" ", 1) for line in out.splitlines())
    }


# For a timing script: Django set up, a test client, and `call_of(url, body)`, the request of
# one (label, url, body) entry of its REQUESTS with the API key of its first argument: a GET
# without a body, else a POST of the body as JSON.
REQUEST_CALLS = """
import json, sys
import django
django.setup()
from django.test import Client
client = Client(HTTP_HOST="127.0.0.1")
auth = {"HTTP_AUTHORIZATION": "Bearer " + sys.argv[1]}


def call_of(url, body):
    if body is None:
        return lambda: client.get(url, **auth)
    data = json.dumps(body)
    return lambda: client.post(url, data, content_type="application/json", **auth)
"""


# For a timing script: CPU seconds per request of this process plus its PostgreSQL backend
# (the database's work counts, the time waiting for a shared CPU does not). Needs a database
# connection kept between requests (the bench settings' DATABASE_CONN_MAX_AGE).
CPU_PER_REQUEST = """
import time
from django.db import connection


def backend_cpu():
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    with open(f"/proc/{pid}/schedstat") as schedstat:  # first field: ns on a CPU
        return pid, int(schedstat.read().split()[0]) / 1e9


def cpu_per_request(get, number):
    pid, backend_before = backend_cpu()
    started = time.process_time()
    for _ in range(number):
        get()
    used = time.process_time() - started
    pid_after, backend_after = backend_cpu()
    assert pid_after == pid, "the database connection changed: set DATABASE_CONN_MAX_AGE"
    return (used + backend_after - backend_before) / number
"""


SEED = """
import django
django.setup()
from django.utils import timezone
from coupons.models import Coupon
from rest_framework.authtoken.models import Token
from tests.factories import MembershipFactory, make_api_key
membership = MembershipFactory(store__slug="bench-store")
now = timezone.now()
Coupon.objects.bulk_create(
    Coupon(store=membership.store, code="BENCH%05d" % n, type=("AMOUNT", "PERCENTAGE")[n % 2],
           discount=1 + n % 50, limit=(None, 100)[n % 2], store_wide=bool(n % 3),
           minimum_amount=(None, 20)[n % 2], created_at=now, updated_at=now)
    for n in range(COUNT)
)
# Statistics, as autovacuum keeps them on a live table: without them the planner guesses one
# row and may sort the whole store's coupons instead of reading the page from the listing's
# index (docs/benchmarks/coupons.md).
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute("ANALYZE")
print(make_api_key(membership.user), Token.objects.create(user=membership.user).key)
"""


def seed(env: dict[str, str], coupons: int) -> tuple[str, str]:
    """Migrates, seeds the store; returns its API key (ours) and authtoken key (the peer's)."""
    python = str(VENV_BIN / "python")
    subprocess.run(
        [python, "manage.py", "migrate", "--noinput", "-v", "0"], env=env, cwd=REPO, check=True
    )
    out = subprocess.run(
        [python, "-c", SEED.replace("COUNT", str(coupons))],
        env=env,
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    )
    key, token = out.stdout.strip().splitlines()[-1].split()
    return key, token


def ensure_wrk() -> str:
    wrk = shutil.which("wrk")
    if wrk is None:
        subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], check=True)
        wrk = shutil.which("wrk")
    return wrk


def wait_until_up(base: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/bench/ping", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("gunicorn did not come up")


def get_json(base: str, path: str, authorization: str) -> dict:
    request = urllib.request.Request(f"{base}{path}", headers={"Authorization": authorization})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def run_wrk(wrk: str, url: str, authorization: str, args) -> dict:
    command = [
        wrk,
        f"-t{args.threads}",
        f"-c{args.connections}",
        f"-d{args.duration}s",
        "--timeout",
        "10s",
        "--latency",
        "-H",
        f"Authorization: {authorization}",
        url,
    ]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    p50 = re.search(r"50%\s+([\d.]+\w+)", out).group(1)
    p99 = re.search(r"99%\s+([\d.]+\w+)", out).group(1)
    return {"rps": rps, "non_2xx": int(errors.group(1)) if errors else 0, "p50": p50, "p99": p99}


RENDERING = """
import timeit
import django
django.setup()
from rest_framework import serializers
from coupons.models import Coupon
from coupons.serializers import CouponSerializer
page = list(Coupon.objects.order_by("id")[:100])
serializer = CouponSerializer()
def by_hand():
    return CouponSerializer(page, many=True).data
def by_drf():
    return [serializers.ModelSerializer.to_representation(serializer, c) for c in page]
assert by_hand() == by_drf()
for name, render in (("hand-built", by_hand), ("DRF per-field", by_drf)):
    best = min(timeit.repeat(render, number=20, repeat=5)) / 20
    print(f"{name}: {best * 1000:.2f} ms per page of 100")
"""


def measure_rendering(env: dict[str, str]) -> str:
    out = subprocess.run(
        [str(VENV_BIN / "python"), "-c", RENDERING],
        env=env,
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def start_gunicorn(repo: Path, port: int, env: dict[str, str], workers: int):
    return subprocess.Popen(
        [
            str(repo / ".venv" / "bin" / "gunicorn"),
            "config.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--log-level",
            "warning",
        ],
        env=env,
        cwd=repo,
    )


def check_same_coupons(base: str, ours: str, peer: str, limit: int) -> None:
    """The peer answers with the same coupon objects and total as our list, or the comparison
    means nothing. The peer's ModelSerializer names the store `store`; other fields match."""
    mine = get_json(base, f"/api/v1/coupons?limit={limit}", ours)
    theirs = get_json(base, f"{PEER_PATH}?page_size={limit}", peer)
    assert len(mine["data"]) == limit and mine["meta"]["total"] == theirs["count"]
    for coupon, peer_coupon in zip(mine["data"], theirs["results"], strict=True):
        assert coupon["store_id"] == peer_coupon["store"]
        assert {k: v for k, v in coupon.items() if k != "store_id"} == {
            k: peer_coupon[k] for k in coupon if k != "store_id"
        }


PEER_PATH = "/bench/peer/coupons"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--coupons", type=int, default=1_000)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument("--connections", type=int, default=8, help="wrk connections")
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument(
        "--compare", type=Path, help="a checkout of the code before the change, to measure too"
    )
    parser.add_argument(
        "--only-peer", action="store_true", help="measure only our list and the peer's"
    )
    args = parser.parse_args()

    env = bench_environment()
    key, token = seed(env, args.coupons)
    ours, peer = f"Bearer {key}", f"Token {token}"
    rendering = measure_rendering(env)
    wrk = ensure_wrk()
    servers = {"after": (REPO, env)}
    if args.compare:
        # "before" first in each table row; the rounds alternate which is measured first.
        servers = {"before": (args.compare.resolve(), bench_environment(args.compare)), **servers}
    bases = {name: f"http://127.0.0.1:{free_port()}" for name in servers}
    # label -> (path, Authorization, measured on the "after" server only)
    targets = {
        "trivial JSON view (/bench/ping)": ("/bench/ping", ours, False),
        "DRF auth+throttle+store, no DB work (/bench/ping-auth)": ("/bench/ping-auth", ours, False),
        "GET /api/v1/coupons?limit=15": ("/api/v1/coupons?limit=15", ours, False),
        "peer ?page_size=15": (f"{PEER_PATH}?page_size=15", peer, True),
        "GET /api/v1/coupons?limit=100": ("/api/v1/coupons?limit=100", ours, False),
        "peer ?page_size=100": (f"{PEER_PATH}?page_size=100", peer, True),
    }
    if args.only_peer:
        targets = {label: t for label, t in targets.items() if "limit=" in label or "peer" in label}
    processes = [
        start_gunicorn(repo, int(bases[name].rsplit(":", 1)[1]), server_env, args.workers)
        for name, (repo, server_env) in servers.items()
    ]
    try:
        for name, base in bases.items():
            wait_until_up(base)
            page15 = get_json(base, "/api/v1/coupons?limit=15", ours)
            page100 = get_json(base, "/api/v1/coupons?limit=100", ours)
            assert len(page15["data"]) == 15 and len(page100["data"]) == 100
            assert page15["meta"]["total"] == args.coupons
            assert page15 == get_json(next(iter(bases.values())), "/api/v1/coupons?limit=15", ours)
            if name == "after":
                check_same_coupons(base, ours, peer, 15)
                check_same_coupons(base, ours, peer, 100)
            for path, authorization, after_only in targets.values():
                if after_only and name != "after":
                    continue
                warm = argparse.Namespace(**{**vars(args), "duration": 2})
                run_wrk(wrk, f"{base}{path}", authorization, warm)  # warm workers and caches
        results = {
            (label, name): []
            for label, (_, _, after_only) in targets.items()
            for name in servers
            if name == "after" or not after_only
        }
        for round_number in range(args.rounds):
            # Alternate both which server and which endpoint of a pair (ours, peer) goes first.
            order = list(servers) if round_number % 2 == 0 else list(reversed(servers))
            labels = list(targets) if round_number % 2 == 0 else list(reversed(targets))
            for label in labels:
                path, authorization, _ = targets[label]
                for name in order:
                    if (label, name) in results:
                        run = run_wrk(wrk, f"{bases[name]}{path}", authorization, args)
                        results[(label, name)].append(run)
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=30)

    print(
        f"\n{args.coupons} coupons; gunicorn {args.workers} sync workers; wrk -t{args.threads} "
        f"-c{args.connections} -d{args.duration}s x {args.rounds} interleaved rounds\n"
    )
    print("| endpoint | code | req/s (median) | rounds | p50 / p99 (last round) | non-2xx |")
    print("|---|---|---|---|---|---|")
    medians = {}
    for (label, name), runs in results.items():
        medians[(label, name)] = statistics.median(r["rps"] for r in runs)
        rounds = ", ".join(f"{r['rps']:.0f}" for r in runs)
        last = runs[-1]
        non_2xx = sum(r["non_2xx"] for r in runs)
        print(
            f"| {label} | {name} | {medians[(label, name)]:.0f} | {rounds} "
            f"| {last['p50']} / {last['p99']} | {non_2xx} |"
        )
    if args.compare:
        print("\n| endpoint | after / before (medians) | per round |")
        print("|---|---|---|")
        for label in targets:
            if (label, "before") not in results:
                continue
            ratio = medians[(label, "after")] / medians[(label, "before")]
            per_round = ", ".join(
                f"{a['rps'] / b['rps']:.2f}"
                for a, b in zip(results[(label, "after")], results[(label, "before")], strict=True)
            )
            print(f"| {label} | {ratio:.2f} | {per_round} |")
    print(f"\nRendering (in process, best of 5):\n{rendering}")
    print("\n| page size | ours / peer req/s (medians) | per round | target | met? |")
    print("|---|---|---|---|---|")
    for size, target in PEER_TARGETS.items():
        mine = results[(f"GET /api/v1/coupons?limit={size}", "after")]
        theirs = results[(f"peer ?page_size={size}", "after")]
        ratio = statistics.median(r["rps"] for r in mine) / statistics.median(
            r["rps"] for r in theirs
        )
        per_round = ", ".join(
            f"{a['rps'] / b['rps']:.2f}" for a, b in zip(mine, theirs, strict=True)
        )
        print(f"| {size} | {ratio:.2f} | {per_round} | {target} | {ratio >= target} |")
    if not args.only_peer:
        after = {label: medians[(label, "after")] for label in targets}
        trivial = after["trivial JSON view (/bench/ping)"]
        share15 = after["GET /api/v1/coupons?limit=15"] / trivial
        share100 = after["GET /api/v1/coupons?limit=100"] / trivial
        print(f"\nlimit=15 reaches {share15:.0%} of the trivial view; limit=100 {share100:.0%}.")


# The targets: our list's req/s at least this many times the peer's, same run.
PEER_TARGETS = {15: 3.5, 100: 3.5}


if __name__ == "__main__":
    main()
