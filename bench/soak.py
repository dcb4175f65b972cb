"""Soak test: minutes of mixed traffic against gunicorn + a Celery worker + beat, watching for
5xx, memory growth, latency drift and a webhook backlog that does not drain.

Run (starts throwaway PostgreSQL and Redis; see docs/benchmarks/soak.md):

    bin/with-test-services .venv/bin/python bench/soak.py [--minutes 10] [--rate 40]

Production settings (plain HTTP on loopback, rate limits and the replay cap raised out of the
way). The driver migrates, seeds one store per client thread (user, membership, all-abilities
API key, CLI refresh token minted through the real authorize + token flow, a webhook
channel on a local receiver, 200 coupons), then starts:

- gunicorn (2 sync workers), `celery worker` (prefork, 2 processes) and `celery beat`;
- a webhook receiver process on 127.0.0.1 answering 200 and logging each `webhook-id`
  (bench/webhook_receiver.py, as the webhook throughput bench uses);
- one client thread per store, paced to `--rate` requests/s in all, each running a weighted mix:
  coupon list / create / update, event polls (following `next_cursor`), delivery list + replay,
  CLI token refreshes (the rotated refresh token is kept, as the CLI does);
- an order thread completing orders (`orders.services.order_complete`, in process) at
  `--orders` per second: each records `order.completed`, which the worker delivers.

Every 5 s it samples the RSS of each gunicorn worker, the Celery worker processes and beat
(from /proc), and the webhook backlog (deliveries still `pending`). After `--minutes` the traffic
stops and it waits (at most `--drain` seconds) for the backlog to reach zero, then prints: the
status counts per operation, p50/p99 per operation per minute, RSS per minute and its growth
from minute 2 to the last minute (goal < 10%), and the backlog. Exit status 1 when a response
was >= 500, the backlog did not drain, or a log line of the servers reports an error.

Bounded: fixed duration, fixed rate, loopback only; every process it starts is stopped at the end.
"""

import argparse
import contextlib
import http.client
import json
import multiprocessing
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
WORKDIR = Path(tempfile.mkdtemp(prefix="soak-"))
sys.path.insert(0, str(REPO))
from webhook_receiver import receiver_main, requests_received  # noqa: E402

# The driver and every server process share this environment (the driver seeds the database
# and completes orders through the same settings the servers run with).
for name in ("DATABASE_URL", "REDIS_URL"):
    if not os.environ.get(name):
        sys.exit(f"{name} is not set: run me under bin/with-test-services")
os.environ.update(
    DJANGO_SETTINGS_MODULE="config.settings.production",
    SECRET_KEY=secrets.token_urlsafe(48)[:60],
    ALLOWED_HOSTS="127.0.0.1,localhost,testserver",
    BASE_URL="https://api.example.com",
    SECURE_SSL_REDIRECT="false",
    API_RATE_LIMIT_PER_MINUTE="1000000000",
    OAUTH_RATE_LIMIT_PER_MINUTE="1000000000",
    WEBHOOKS_REPLAY_LIMIT="1000000000",
    WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS="true",
    PROMETHEUS_MULTIPROC_DIR=str(WORKDIR / "prometheus"),
    LOG_LEVEL="WARNING",
    PYTHONPATH=str(REPO),
)

OPERATIONS = {  # weight in the mix of each client thread
    "coupon list": 30,
    "coupon create": 10,
    "coupon update": 15,
    "event poll": 25,
    "delivery list + replay": 10,
    "token refresh": 10,
}
GROWTH_GOAL = 0.10


# --- seeding ----------------------------------------------------------------------------------


def seed(stores: int, receiver_port: int) -> list[dict]:
    from django.core.management import call_command
    from django.test import Client
    from django.utils import timezone

    from coupons.models import Coupon
    from tests.factories import MembershipFactory, make_api_key
    from tests.oauth_cli.flow import connect
    from webhooks.channels.destination import destination_put

    call_command("migrate", verbosity=0)
    call_command("ensure_cli_client", verbosity=0)
    clients = []
    now = timezone.now()
    for number in range(stores):
        membership = MembershipFactory(store__slug=f"soak-{number}")
        store = membership.store
        Coupon.objects.bulk_create(
            Coupon(store=store, code=f"SEED{n:05d}", type=("AMOUNT", "PERCENTAGE")[n % 2],
                   discount=1 + n % 50, store_wide=True, created_at=now, updated_at=now)
            for n in range(200)
        )  # fmt: skip
        destination_put(
            store=store,
            url=f"http://127.0.0.1:{receiver_port}/hooks",
            event_types=["order.completed"],
        )
        browser = Client()
        browser.force_login(membership.user)
        clients.append(
            {
                "number": number,
                "store": store,
                "slug": store.slug,
                "key": make_api_key(membership.user),
                "refresh_token": connect(browser)["refresh_token"],
                "coupon_ids": list(
                    Coupon.objects.filter(store=store).values_list("id", flat=True)[:50]
                ),
            }
        )
    return clients


# --- servers ----------------------------------------------------------------------------------


def start(name: str, command: list[str]) -> subprocess.Popen:
    log = open(WORKDIR / f"{name}.log", "wb")  # noqa: SIM115 - lives as long as the process
    return subprocess.Popen(
        command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def start_servers(port: int) -> dict[str, subprocess.Popen]:
    return {
        "gunicorn": start(
            "gunicorn",
            [
                str(VENV_BIN / "gunicorn"),
                "config.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "2",
                "--log-level",
                "warning",
            ],
        ),
        "worker": start(
            "worker",
            [
                str(VENV_BIN / "celery"),
                "-A",
                "config",
                "worker",
                "--concurrency=2",
                "--without-gossip",
                "--without-mingle",
            ],
        ),
        "beat": start(
            "beat",
            [
                str(VENV_BIN / "celery"),
                "-A",
                "config",
                "beat",
                "--schedule",
                str(WORKDIR / "beat-schedule"),
            ],
        ),
    }


def stop_servers(servers: dict[str, subprocess.Popen]) -> None:
    for process in servers.values():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 15)
    for process in servers.values():
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()


def wait_until_up(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/healthz")
            if connection.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError("gunicorn did not come up")


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # The field after the parenthesised command name is the state, then the ppid.
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def memory(servers: dict[str, subprocess.Popen]) -> dict[str, int]:
    """RSS in KiB: gunicorn's workers (the master only forks), the Celery worker's main process
    and its pool processes, beat."""
    gunicorn_workers = children_of(servers["gunicorn"].pid)
    worker_pids = [servers["worker"].pid, *children_of(servers["worker"].pid)]
    return {
        "web (gunicorn workers)": sum(rss_kib(pid) for pid in gunicorn_workers),
        "worker (main + pool)": sum(rss_kib(pid) for pid in worker_pids),
        "beat": rss_kib(servers["beat"].pid),
        "_pids": (tuple(gunicorn_workers), tuple(worker_pids)),
    }


def backlog() -> int:
    from django.db import connection

    from webhooks.models import WebhookDelivery

    try:
        return WebhookDelivery.objects.filter(status=WebhookDelivery.STATUS_PENDING).count()
    finally:
        connection.close()


# --- traffic ----------------------------------------------------------------------------------


class Recorder:
    def __init__(self, started: float):
        self.started = started
        self.lock = threading.Lock()
        self.latencies = defaultdict(list)  # (operation, minute) -> [ms]
        self.statuses = defaultdict(lambda: defaultdict(int))  # operation -> status -> count
        self.server_errors = []

    def add(self, operation: str, status: int, started: float, body: bytes) -> None:
        elapsed = (time.monotonic() - started) * 1000
        minute = int((started - self.started) // 60) + 1
        with self.lock:
            self.latencies[(operation, minute)].append(elapsed)
            self.statuses[operation][status] += 1
            if status >= 500 or status == 0:
                self.server_errors.append((operation, status, body[:300]))


class Client:
    """One thread's client: its own store, API key, cursor, refresh token, connection."""

    def __init__(self, port: int, seeded: dict, recorder: Recorder):
        self.port = port
        self.seeded = seeded
        self.recorder = recorder
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.cursor = None
        self.created = 0
        self.random = random.Random(seeded["number"])

    def call(self, operation, method, path, body=None, headers=None, form=False):
        headers = dict(headers or {})
        if body is not None:
            if form:
                payload = urllib.parse.urlencode(body).encode()
                headers["Content-Type"] = "application/x-www-form-urlencoded"
            else:
                payload = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
        else:
            payload = None
        started = time.monotonic()
        try:
            self.connection.request(method, path, body=payload, headers=headers)
            response = self.connection.getresponse()
            content = response.read()
            status = response.status
        except (OSError, http.client.HTTPException) as error:
            self.connection.close()
            content, status = repr(error).encode(), 0
        self.recorder.add(operation, status, started, content)
        try:
            return status, json.loads(content) if content else None
        except ValueError:
            return status, None

    def api(self, operation, method, path, body=None, idempotent=False):
        headers = {"Authorization": f"Bearer {self.seeded['key']}", "X-STORE": self.seeded["slug"]}
        if idempotent:
            headers["Idempotency-Key"] = str(uuid.uuid4())
        return self.call(operation, method, path, body, headers)

    def run(self, operation: str) -> None:
        if operation == "coupon list":
            page = self.random.randint(1, 5)
            self.api(operation, "GET", f"/api/v1/coupons?limit=15&page={page}")
        elif operation == "coupon create":
            self.created += 1
            status, body = self.api(
                operation,
                "POST",
                "/api/v1/coupons",
                {
                    "code": f"SOAK{self.seeded['number']}X{self.created}",
                    "type": "AMOUNT",
                    "discount": 1 + self.created % 40,
                    "store_wide": True,
                },
                idempotent=True,
            )
            if status == 201:
                self.seeded["coupon_ids"].append(body["id"])
        elif operation == "coupon update":
            coupon_id = self.random.choice(self.seeded["coupon_ids"])
            self.api(
                operation,
                "PATCH",
                f"/api/v1/coupons/{coupon_id}",
                {"discount": self.random.randint(1, 40), "minimum_amount": 10},
                idempotent=True,
            )
        elif operation == "event poll":
            query = "limit=50" + (
                f"&cursor={urllib.parse.quote(self.cursor)}" if self.cursor else ""
            )
            status, body = self.api(operation, "GET", f"/api/v2/events?{query}")
            if status == 200:
                self.cursor = body["meta"]["next_cursor"]
        elif operation == "delivery list + replay":
            status, body = self.api("delivery list", "GET", "/api/v2/webhook-deliveries?limit=15")
            if status == 200 and body["data"]:
                delivery = self.random.choice(body["data"])["id"]
                self.api(
                    "delivery replay",
                    "POST",
                    f"/api/v2/webhook-deliveries/{delivery}/replay",
                    {},
                    idempotent=True,
                )
        elif operation == "token refresh":
            from django.conf import settings

            status, body = self.call(
                operation,
                "POST",
                "/oauth/token",
                {
                    "grant_type": "refresh_token",
                    "client_id": settings.CLI_CLIENT_ID,
                    "refresh_token": self.seeded["refresh_token"],
                },
                form=True,
            )
            if status == 200:
                self.seeded["refresh_token"] = body["refresh_token"]


def client_loop(client: Client, rate: float, until: float) -> None:
    names, weights = list(OPERATIONS), list(OPERATIONS.values())
    interval = 1.0 / rate
    next_at = time.monotonic()
    while time.monotonic() < until:
        client.run(client.random.choices(names, weights)[0])
        next_at += interval
        # Paced, not closed-loop: a slow minute shows as latency, not as fewer requests.
        time.sleep(max(0.0, next_at - time.monotonic()))


def order_loop(stores: list, rate: float, until: float, recorder: Recorder) -> None:
    from django.db import connection

    from orders.services import order_complete, order_place

    interval = 1.0 / rate
    next_at = time.monotonic()
    n = 0
    while time.monotonic() < until:
        n += 1
        started = time.monotonic()
        try:
            order = order_place(store=stores[n % len(stores)], subtotal_cents=1000 + n)
            order_complete(order=order)
            status = 200
        except Exception as error:
            status, body = 0, repr(error).encode()
        else:
            body = b""
        recorder.add("order complete (in process)", status, started, body)
        next_at += interval
        time.sleep(max(0.0, next_at - time.monotonic()))
    connection.close()


def sampler(servers, samples: list, started: float, stop: threading.Event) -> None:
    while not stop.wait(5):
        sample = memory(servers)
        sample["at"] = time.monotonic() - started
        sample["backlog"] = backlog()
        sample["load"] = float(Path("/proc/loadavg").read_text().split()[0])
        samples.append(sample)


# --- report -----------------------------------------------------------------------------------


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def log_errors() -> dict[str, list[str]]:
    found = {}
    for log in sorted(WORKDIR.glob("*.log")):
        lines = [
            line
            for line in log.read_text(errors="replace").splitlines()
            if any(word in line for word in ("ERROR", "CRITICAL", "Traceback", "WORKER TIMEOUT"))
        ]
        if lines:
            found[log.name] = lines
    return found


def report(
    recorder, samples, minutes, drained_after, final_backlog, arrivals, events, deliveries
) -> bool:
    operations = sorted({operation for operation, _ in recorder.latencies})
    print("\n## Responses per operation\n")
    print("| operation | requests | statuses |")
    print("|---|---|---|")
    server_errors = 0
    for operation in operations:
        statuses = recorder.statuses[operation]
        server_errors += sum(n for status, n in statuses.items() if status >= 500 or status == 0)
        listed = ", ".join(f"{status}: {n}" for status, n in sorted(statuses.items()))
        print(f"| {operation} | {sum(statuses.values())} | {listed} |")
    print(f"\nresponses >= 500 (or no response): {server_errors}")
    for operation, status, body in recorder.server_errors[:10]:
        print(f"  {operation} {status}: {body!r}")

    print("\n## p50 / p99 (ms) per operation per minute\n")
    columns = range(1, minutes + 1)
    print("| operation | " + " | ".join(f"min {m}" for m in columns) + " |")
    print("|---|" + "---|" * minutes)
    for operation in operations:
        cells = []
        for minute in columns:
            values = recorder.latencies.get((operation, minute))
            cells.append(
                f"{statistics.median(values):.0f} / {percentile(values, 0.99):.0f}"
                if values
                else "-"
            )
        print(f"| {operation} | " + " | ".join(cells) + " |")
    print("\nrequests per minute: " + ", ".join(
        str(sum(len(recorder.latencies.get((op, m), [])) for op in operations)) for m in columns
    ))  # fmt: skip

    print("\n## RSS (MiB, mean of the 5 s samples in each minute)\n")
    roles = [key for key in samples[0] if key not in ("at", "backlog", "load", "_pids")]
    by_minute = defaultdict(list)
    for sample in samples:
        by_minute[min(minutes, int(sample["at"] // 60) + 1)].append(sample)
    print(
        "| process | "
        + " | ".join(f"min {m}" for m in sorted(by_minute))
        + " | growth min 2 → last |"
    )
    print("|---|" + "---|" * (len(by_minute) + 1))
    grew = False
    for role in roles:
        means = {m: statistics.mean(s[role] for s in rows) / 1024 for m, rows in by_minute.items()}
        last = max(means)
        growth = (means[last] - means[2]) / means[2] if 2 in means else float("nan")
        grew = grew or growth >= GROWTH_GOAL
        cells = " | ".join(f"{means[m]:.1f}" for m in sorted(means))
        print(f"| {role} | {cells} | {growth:+.1%} |")
    loads = " | ".join(
        f"{statistics.mean(s['load'] for s in rows):.1f}" for _, rows in sorted(by_minute.items())
    )
    print(f"| load average (1 min; 2 vCPU shared) | {loads} | |")
    pid_sets = {sample["_pids"] for sample in samples}
    print(f"process sets seen (a worker restarted if > 1): {len(pid_sets)}")

    print("\n## Webhook backlog (deliveries pending)\n")
    print(
        "per minute (max of the samples): "
        + ", ".join(str(max(s["backlog"] for s in rows)) for _, rows in sorted(by_minute.items()))
    )
    print(f"events recorded (all types): {events}; deliveries by status: {deliveries}")
    print(f"webhook requests the receiver answered: {arrivals}")
    if final_backlog == 0:
        print(f"backlog drained to 0, {drained_after:.1f} s after the traffic stopped")
    else:
        print(f"backlog NOT drained: {final_backlog} still pending")

    errors = log_errors()
    print(f"\nserver log lines with ERROR/CRITICAL/Traceback: {sum(map(len, errors.values()))}")
    for name, lines in errors.items():
        for line in lines[:5]:
            print(f"  {name}: {line[:300]}")
    return server_errors == 0 and final_backlog == 0 and not errors and not grew


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=int, default=10)
    parser.add_argument("--rate", type=float, default=20.0, help="API requests/s, all threads")
    parser.add_argument("--threads", type=int, default=4, help="client threads (one store each)")
    parser.add_argument("--orders", type=float, default=5.0, help="orders completed per second")
    parser.add_argument("--drain", type=float, default=120.0, help="max seconds to drain")
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection
    from django.db.models import Count

    from events.models import Event
    from webhooks.models import WebhookDelivery

    receiver_log = WORKDIR / "receiver.log"
    port_queue = multiprocessing.Queue()
    receiver = multiprocessing.Process(target=receiver_main, args=(port_queue, receiver_log))
    receiver.daemon = True
    receiver.start()
    seeded = seed(args.threads, port_queue.get(timeout=10))
    connection.close()  # the forks of the servers must not share it; threads open their own

    port = int(
        subprocess.check_output(
            [sys.executable, "-c", "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); "
             "print(s.getsockname()[1])"], text=True
        )
    )  # fmt: skip
    servers = start_servers(port)
    try:
        wait_until_up(port)
        print(f"soak: {args.minutes} min, {args.rate:g} req/s over {args.threads} threads, "
              f"{args.orders:g} orders/s; logs in {WORKDIR}", flush=True)  # fmt: skip
        started = time.monotonic()
        until = started + args.minutes * 60
        recorder = Recorder(started)
        samples: list[dict] = []
        stop = threading.Event()
        threads = [
            threading.Thread(
                target=client_loop,
                args=(Client(port, seed_, recorder), args.rate / args.threads, until),
            )
            for seed_ in seeded
        ]
        threads.append(
            threading.Thread(
                target=order_loop,
                args=([s["store"] for s in seeded], args.orders, until, recorder),
            )
        )
        threads.append(threading.Thread(target=sampler, args=(servers, samples, started, stop)))
        for thread in threads:
            thread.start()
        for thread in threads[:-1]:
            thread.join()
        stopped = time.monotonic()
        final_backlog = backlog()
        while final_backlog and time.monotonic() - stopped < args.drain:
            time.sleep(1)
            final_backlog = backlog()
        drained_after = time.monotonic() - stopped
        time.sleep(1)  # the receiver's count of the last delivery
        stop.set()
        threads[-1].join()
        events = Event.objects.count()
        deliveries = dict(
            WebhookDelivery.objects.values_list("status").annotate(n=Count("id")).order_by()
        )
    finally:
        stop_servers(servers)
        receiver.terminate()
    ok = report(
        recorder,
        samples,
        args.minutes,
        drained_after,
        final_backlog,
        len(requests_received(receiver_log)),
        events,
        deliveries,
    )
    print("\nverdict:", "clean" if ok else "FINDINGS (see above)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
