"""Noisy neighbour: what one tenant, inside its own rate limit, costs another tenant's requests.

Run (starts throwaway PostgreSQL and Redis; see docs/benchmarks/noisy-neighbour.md):

    bin/with-test-services .venv/bin/python bench/noisy_neighbour.py \
        [--idle 20] [--during 45] [--checkout DIR ...]

For each checkout (every `--checkout DIR` in turn, then this one; a checkout without its own
`.venv` runs on this one's), on a fresh database and Redis database of its own:

- migrates and seeds, with that checkout's code, two tenants: "noisy" (A: 3,000 coupons and
  3,000 `coupon.created` events in its journal) and "quiet" (B: 30 coupons), each a user, a
  store and all-abilities API keys;
- starts the documented production web command, `gunicorn config.wsgi -c
  config/gunicorn.conf.py` (production settings, `WEB_CONCURRENCY` workers, `--bind` to a free
  loopback port, nothing else), a Celery worker (every queue) and beat;
- through the API with a setup key of A's: sets A's signing secret and creates `--channels`
  webhook channels (until one is refused: a cap is expected) on two local receivers, one that
  accepts and never answers, one that answers a different malformed response each time;
- phase "idle": B alone, `GET /api/v1/coupons` with `X-STORE` from `--quiet-threads` threads
  (one API key each), each paced at `--quiet-rate` requests/s and waiting for each answer;
- phase "during": B exactly as in idle while A runs the four abuses at once, each from its
  own thread(s), all with one API key: (1) the test send to the receiver that never answers,
  (2) the coupon search with 50 distinct `like` patterns, (3) 100-coupon batch updates whose
  events fan out to every channel, (4) recover -> disable -> enable -> recover of a channel on
  the malformed receiver (which the fan-out's deliveries reach too). A's whole traffic is paced
  below its per-key limit (`--noisy-share` of the X-RateLimit-Limit the API announces, split
  evenly over the four); a missed slot is not made up, so no minute sees a burst. `--abuses`
  runs a subset (e.g. `--abuses test,search`), each still at its quarter.

It prints B's p50/p95/max, count, slots missed (a slot that passed while the thread still waited
for its previous answer: the stall as lost requests, not only as latency) and errors in each
phase and the ratios during/idle; A's answers per abuse (2xx, 4xx, 429, 503, other 5xx, none);
and the servers' ERROR lines by exception and gunicorn's worker timeouts. Every loop is bounded
in count and time, the traffic is loopback only, and every process it starts is stopped at the
end of its checkout's run (its logs stay in the directory printed).
"""

import argparse
import base64
import http.client
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from hostile_receivers import HangingReceiver, HostileReceiver  # noqa: E402

from tests.servers import answers, free_port, stop_process, wait_for  # noqa: E402
from tests.settings_helpers import production_environment  # noqa: E402

# Each client's wait for an answer; gunicorn's own worker timeout (30 s) comes first.
CLIENT_TIMEOUT = 60.0
DEFAULT_RATE_LIMIT = 120  # API_RATE_LIMIT_PER_MINUTE's default, when no answer announces one
EVENT_TYPES = ["order.completed", "coupon.created", "coupon.updated", "coupon.deleted"]
ABUSES = ("test", "search", "fanout", "recover")
SEARCH_PATTERNS = 50
BATCH_SIZE = 100

SEED = """
import json, sys
import django
django.setup()
from django.db import connection, transaction
from django.utils import timezone
from coupons.models import Coupon
from events.services import record
from tests.factories import MembershipFactory, make_api_key

noisy_coupons, quiet_coupons, events, quiet_keys, batch = map(int, sys.argv[1:6])
now = timezone.now()


def coupons(store, prefix, count):
    return Coupon.objects.bulk_create(
        Coupon(store=store, code="%s%05d" % (prefix, n), type=("AMOUNT", "PERCENTAGE")[n % 2],
               discount=1 + n % 50, store_wide=True, created_at=now, updated_at=now)
        for n in range(count)
    )


noisy = MembershipFactory(store__slug="noisy")
quiet = MembershipFactory(store__slug="quiet")
made = coupons(noisy.store, "NOISY", noisy_coupons)
coupons(quiet.store, "QUIET", quiet_coupons)
# What recover finds missed (no channel exists yet, so no delivery is made now).
with transaction.atomic():
    for coupon in made[:events]:
        record(store=noisy.store, type="coupon.created", subject=coupon, data={})
with connection.cursor() as cursor:
    cursor.execute("ANALYZE")
print(json.dumps({
    "noisy_setup_key": make_api_key(noisy.user),
    "noisy_key": make_api_key(noisy.user),
    "quiet_keys": [make_api_key(quiet.user) for _ in range(quiet_keys)],
    "batch_ids": [coupon.id for coupon in made[:batch]],
}))
"""


# --- clients ----------------------------------------------------------------------------------


class Pacer:
    """Hands out request slots `1 / per_second` apart until `until` (monotonic): a slot nobody
    was free to take is lost, so however the answers are delayed no window sees a burst."""

    def __init__(self, per_second: float, until: float):
        self.interval = 1.0 / per_second
        self.until = until
        self.next_at = time.monotonic()
        self.lock = threading.Lock()
        self.missed = 0  # slots that passed while every thread waited for an answer

    def wait(self) -> bool:
        with self.lock:
            now = time.monotonic()
            if now > self.next_at:
                self.missed += int((min(now, self.until) - self.next_at) / self.interval)
            at = max(self.next_at, now)
            self.next_at = at + self.interval
        if at >= self.until:
            return False
        time.sleep(max(0.0, at - time.monotonic()))
        return True


class Api:
    """One thread's keep-alive connection with one credential and store."""

    def __init__(self, port: int, key: str, store: str):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=CLIENT_TIMEOUT)
        self.headers = {"Authorization": f"Bearer {key}", "X-STORE": store}

    def call(self, method: str, path: str, body=None) -> tuple[int, float, dict, bytes]:
        """(status or 0 for no answer, seconds, headers, body)."""
        headers = dict(self.headers)
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        started = time.monotonic()
        # A kept-alive connection the server closed while idle (gunicorn's keepalive) is
        # opened again once, as every HTTP client does; any other failure is no answer.
        for attempt in (1, 2):
            try:
                self.connection.request(method, path, body=payload, headers=headers)
                response = self.connection.getresponse()
                content = response.read()
                status, answer_headers = response.status, dict(response.getheaders())
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as error:
                self.connection.close()
                status, answer_headers, content = 0, {}, repr(error).encode()
                if attempt == 2 or time.monotonic() - started > 1:
                    break
            except (OSError, http.client.HTTPException) as error:
                self.connection.close()
                status, answer_headers, content = 0, {}, repr(error).encode()
                break
        return status, time.monotonic() - started, answer_headers, content


def quiet_loop(api: Api, pacer: Pacer, latencies: list, statuses: Counter) -> None:
    while pacer.wait():
        status, seconds, _, _ = api.call("GET", "/api/v1/coupons?limit=15")
        latencies.append(seconds * 1000)
        statuses[status] += 1


def noisy_loop(api: Api, pacer: Pacer, requests, answered: Counter, seconds: list) -> None:
    """Sends the next of `requests` (an endless iterator of (method, path, body)) at each slot."""
    while pacer.wait():
        method, path, body = next(requests)
        status, elapsed, _, _ = api.call(method, path, body)
        answered[status] += 1
        seconds.append(elapsed)


def test_sends(channel: str):
    while True:
        yield "POST", f"/api/v2/webhook-channels/{channel}/test", {"event": "order.completed"}


def searches():
    # 50 distinct patterns that no code matches, or-ed: each is tried on every row.
    filters = [
        {"type": "or", "field": "code", "operator": "like", "value": f"%Z{n:02d}_%Q%"}
        for n in range(SEARCH_PATTERNS)
    ]
    while True:
        yield "POST", "/api/v1/coupons/search?limit=15", {"filters": filters}


def batch_updates(ids: list[int]):
    round_number = 0
    while True:
        round_number += 1
        discount = 1 + round_number % 40
        changes = {str(coupon_id): {"discount": discount} for coupon_id in ids}
        yield "PATCH", "/api/v1/coupons/batch", {"resources": changes}


def recover_cycles(channel: str, since: str):
    path = f"/api/v2/webhook-channels/{channel}"
    while True:
        yield "POST", f"{path}/recover", {"since": since}
        yield "PATCH", path, {"enabled": False}
        yield "PATCH", path, {"enabled": True}


# --- one checkout's run -----------------------------------------------------------------------


def venv_bin(checkout: Path) -> Path:
    venv = checkout / ".venv" if (checkout / ".venv").exists() else REPO / ".venv"
    return venv / "bin"


def with_path(url: str, path: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=path))


def environment(checkout: Path, workdir: Path, database_url: str, redis_url: str, args) -> dict:
    (workdir / "prometheus").mkdir(exist_ok=True)
    return production_environment(
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        # Plain HTTP on loopback, as behind a proxy that terminates TLS (tests/servers.py).
        ALLOWED_HOSTS="127.0.0.1",
        SECURE_SSL_REDIRECT="false",
        WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS="true",
        WEB_CONCURRENCY=str(args.web_concurrency),
        STOREFRONT_VAR_DIR=str(workdir),
        PROMETHEUS_MULTIPROC_DIR=str(workdir / "prometheus"),
        LOG_LEVEL="WARNING",
        PYTHONPATH=str(checkout),
    )


def start(name: str, command: list[str], checkout: Path, env: dict, workdir: Path):
    with (workdir / f"{name}.log").open("wb") as log:
        return subprocess.Popen(
            command,
            cwd=checkout,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def gunicorn_settings(checkout: Path, env: dict) -> str:
    printed = subprocess.run(
        [str(venv_bin(checkout) / "gunicorn"), "config.wsgi", "-c", "config/gunicorn.conf.py",
         "--print-config"],
        cwd=checkout, env=env, capture_output=True, text=True, timeout=60,
    ).stdout  # fmt: skip
    values = dict(
        (name.strip(), value.strip())
        for name, _, value in (line.partition("=") for line in printed.splitlines())
    )
    names = ("workers", "worker_class", "threads", "timeout")
    return ", ".join(f"{name} {values.get(name, '?')}" for name in names)


def servers_of(checkout: Path, port: int, workdir: Path, args) -> dict[str, list[str]]:
    """The web (the documented command; WEB_CONCURRENCY sets its workers), a worker and beat as
    docs/production.md "The processes" runs them; the worker consumes every queue, so whatever
    queue a checkout sends a task to is served."""
    bin_dir = venv_bin(checkout)
    return {
        "gunicorn": [str(bin_dir / "gunicorn"), "config.wsgi", "-c", "config/gunicorn.conf.py",
                     "--bind", f"127.0.0.1:{port}"],
        "worker": [str(bin_dir / "celery"), "-A", "config", "worker",
                   f"--concurrency={args.worker_concurrency}", "--without-gossip",
                   "--without-mingle", "-l", "WARNING"],
        "beat": [str(bin_dir / "celery"), "-A", "config", "beat", "-l", "WARNING",
                 "--schedule", str(workdir / "beat-schedule")],
    }  # fmt: skip


def setup_noisy(port: int, key: str, receivers, channels: int) -> dict:
    """A's signing secret and channels, through the API; returns what was made and answered."""
    api = Api(port, key, "noisy")
    secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    status, _, headers, _ = api.call(
        "PUT", "/api/v2/webhook-channels/signing-secret", {"signing_secret": secret}
    )
    answered = Counter({status: 1})
    limit = int(headers.get("X-RateLimit-Limit", DEFAULT_RATE_LIMIT))
    made = []
    for number in range(channels):
        # The test sends' channel on the hanging receiver; the others alternate.
        receiver = receivers["hostile"] if number % 2 else receivers["hanging"]
        status, _, _, body = api.call(
            "POST",
            "/api/v2/webhook-channels",
            {
                "name": f"noisy {number}",
                "url": f"http://127.0.0.1:{receiver.port}/c{number}",
                "allowed_notifications": EVENT_TYPES,
            },
        )
        answered[status] += 1
        if status != 201:
            break  # over the store's cap
        made.append(json.loads(body)["data"]["id"])
    return {"channels": made, "answered": answered, "limit": limit}


def database_figures(database_url: str) -> dict:
    import psycopg

    queries = {
        "deliveries": "SELECT status, count(*) FROM webhooks_webhookdelivery GROUP BY status",
        "attempts": "SELECT count(*) FROM webhooks_webhookdeliveryattempt",
    }
    found = {}
    with psycopg.connect(database_url, autocommit=True) as connection:
        for name, sql in queries.items():
            try:
                found[name] = dict(connection.execute(sql).fetchall()) if name == "deliveries" \
                    else connection.execute(sql).fetchone()[0]  # fmt: skip
            except psycopg.Error as error:
                found[name] = f"n/a ({error.__class__.__name__})"
    return found


# "module.Name: message" at the start of a traceback's line (not "DETAIL:", "SQL statement").
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*[a-z][\w.]*: .*$", re.MULTILINE)


def log_trouble(workdir: Path) -> dict[str, Counter]:
    """Per server log: its ERROR/CRITICAL lines by exception (the last line of the traceback, or
    the message), gunicorn's worker timeouts, and plain tracebacks."""
    found = {}
    for log in sorted(workdir.glob("*.log")):
        counts = Counter()
        for line in log.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                entry = None
            if isinstance(entry, dict):
                if entry.get("level") in ("ERROR", "CRITICAL"):
                    text = entry.get("exc_info") or ""
                    raised = EXCEPTION_LINE.findall(text)
                    counts[(raised[-1] if raised else entry.get("message", "?"))[:120]] += 1
            elif "WORKER TIMEOUT" in line:
                counts["WORKER TIMEOUT"] += 1
            elif line.startswith("Traceback"):
                counts["Traceback (plain)"] += 1
        found[log.stem] = counts
    return found


def drop_database(admin_url: str, name: str) -> None:
    """Stops what still runs there (a search gunicorn gave up on keeps running in PostgreSQL),
    then drops it, so the next checkout starts on a quiet server."""
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [name]
        )
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run_checkout(number: int, checkout: Path, args) -> dict:
    import psycopg

    workdir = Path(tempfile.mkdtemp(prefix=f"noisy-{number}-"))
    admin_url = os.environ["DATABASE_URL"]
    name = f"noisy_{number}"
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    # A Redis database of its own: no rate-limit window, lock or queue left by the previous.
    env = environment(
        checkout,
        workdir,
        with_path(admin_url, f"/{name}"),
        with_path(os.environ["REDIS_URL"], f"/{number + 1}"),
        args,
    )
    python = str(venv_bin(checkout) / "python")
    commit = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True, check=False,
    ).stdout.strip() or "?"  # fmt: skip
    print(f"\n== {checkout} ({commit}); logs in {workdir}", flush=True)
    begun = time.monotonic()
    for step in (["manage.py", "migrate", "--noinput", "-v", "0"],
                 ["-c", SEED, str(args.coupons), "30", str(args.events), str(args.quiet_threads),
                  str(BATCH_SIZE)]):  # fmt: skip
        seeded_at = datetime.now(UTC)
        done = subprocess.run(
            [python, *step], cwd=checkout, env=env, capture_output=True, text=True, check=False
        )
        if done.returncode:
            sys.exit(f"{step[:2]} failed in {checkout}:\n{done.stderr[-3000:]}")
    seeded = json.loads(done.stdout.strip().splitlines()[-1])
    port = free_port()
    servers = servers_of(checkout, port, workdir, args)
    gunicorn = gunicorn_settings(checkout, env)
    print(
        f"web: {' '.join(servers['gunicorn'][1:])} with WEB_CONCURRENCY="
        f"{args.web_concurrency}: {gunicorn}",
        flush=True,
    )

    receivers = {"hanging": HangingReceiver(), "hostile": HostileReceiver()}
    processes = {}
    try:
        for role, command in servers.items():
            processes[role] = start(role, command, checkout, env, workdir)
        wait_for(
            lambda: answers(f"http://127.0.0.1:{port}/healthz"),
            timeout=60,
            what="gunicorn answering /healthz",
            interval=0.2,
            process=processes["gunicorn"],
            log=lambda: (workdir / "gunicorn.log").read_text(errors="replace")[-3000:],
        )
        setup = setup_noisy(port, seeded["noisy_setup_key"], receivers, args.channels)
        print(
            f"ready after {time.monotonic() - begun:.0f} s; noisy tenant: "
            f"{len(setup['channels'])} channels, setup answers {dict(setup['answered'])}, "
            f"per-key limit {setup['limit']}/min",
            flush=True,
        )
        quiet = [Api(port, key, "quiet") for key in seeded["quiet_keys"]]
        for api in quiet:  # untimed: connections, each worker's identity caches
            for _ in range(5):
                api.call("GET", "/api/v1/coupons?limit=15")

        result = {"checkout": str(checkout), "commit": commit, "gunicorn": gunicorn}
        result["setup"] = setup
        for phase, seconds in (("idle", args.idle), ("during", args.during)):
            until = time.monotonic() + seconds
            latencies, statuses = [], Counter()
            pacers = [Pacer(args.quiet_rate, until) for _ in quiet]
            threads = [
                threading.Thread(target=quiet_loop, args=(api, pacer, latencies, statuses))
                for api, pacer in zip(quiet, pacers, strict=True)
            ]
            if phase == "during":
                result["noisy"], noisy = noisy_threads(port, seeded, setup, seeded_at, until, args)
                threads += noisy
            started = time.monotonic()
            print(f"phase {phase}: {seconds:g} s", flush=True)
            for thread in threads:
                thread.start()
            for thread in threads:
                # Bounded: the pacers stop at `until`, each request at CLIENT_TIMEOUT.
                thread.join(timeout=max(0.0, until - time.monotonic()) + CLIENT_TIMEOUT + 5)
            result[phase] = {
                "latencies": latencies,
                "statuses": statuses,
                "missed": sum(pacer.missed for pacer in pacers),
                "elapsed": time.monotonic() - started,
            }
        result["receivers"] = {
            "hanging accepted": receivers["hanging"].accepted,
            "hostile answered": receivers["hostile"].answered,
        }
        result["database"] = database_figures(env["DATABASE_URL"])
    finally:
        stopping = time.monotonic()
        for process in processes.values():
            process.terminate()  # all at once; then each waited for, killed after 30 s
        for process in processes.values():
            stop_process(process)
        for receiver in receivers.values():
            receiver.close()
        drop_database(admin_url, name)
    print(f"servers stopped in {time.monotonic() - stopping:.0f} s", flush=True)
    result["logs"] = log_trouble(workdir)
    return result


def noisy_threads(port, seeded, setup, seeded_at, until, args):
    """A's abuses (`--abuses`), each paced at a quarter of its share of the per-key budget, from
    its own thread(s), all with A's one key: (records by abuse, threads)."""
    per_second = setup["limit"] * args.noisy_share / 60 / 4
    channels = setup["channels"]
    since = (seeded_at - timedelta(minutes=1)).isoformat().replace("+00:00", "Z")
    abuses = {
        "test": ("test send (receiver never answers)", args.test_threads,
                 lambda: test_sends(channels[0])),
        "search": (f"search, {SEARCH_PATTERNS} like patterns", args.search_threads, searches),
        "fanout": (f"batch update of {BATCH_SIZE} (fan-out)", 1,
                   lambda: batch_updates(seeded["batch_ids"])),
        "recover": ("recover / disable / enable", 1,
                    lambda: recover_cycles(channels[1 % len(channels)], since)),
    }  # fmt: skip
    records, threads = {}, []
    # The test send and recover need a channel: none when even the first create was refused.
    wanted = [name for name in args.abuses if channels or name not in ("test", "recover")]
    for abuse, count, requests in (abuses[name] for name in wanted):
        pacer = Pacer(per_second, until)
        record = records[abuse] = {"answered": Counter(), "seconds": []}
        for _ in range(count):
            api = Api(port, seeded["noisy_key"], "noisy")
            threads.append(
                threading.Thread(
                    target=noisy_loop,
                    args=(api, pacer, requests(), record["answered"], record["seconds"]),
                )
            )
    return records, threads


# --- report -----------------------------------------------------------------------------------


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def figures(phase: dict) -> dict:
    values = phase["latencies"]
    return {
        "count": len(values),
        "missed": phase["missed"],
        "errors": sum(n for status, n in phase["statuses"].items() if status != 200),
        "p50": statistics.median(values) if values else float("nan"),
        "p95": percentile(values, 0.95) if values else float("nan"),
        "max": max(values, default=float("nan")),
    }


def answer_classes(answered: Counter) -> dict[str, int]:
    classes = Counter()
    for status, n in answered.items():
        if status == 0:
            classes["no answer"] += n
        elif status in (429, 503):
            classes[str(status)] += n
        elif status < 300:
            classes["2xx"] += n
        elif status < 500:
            classes["4xx (not 429)"] += n
        else:
            classes["other 5xx"] += n
    return classes


def report(result: dict) -> None:
    idle, during = figures(result["idle"]), figures(result["during"])
    print(f"\n### {result['checkout']} ({result['commit']})\n")
    print(f"gunicorn: {result['gunicorn']}; load average now: {load()}\n")
    print("Tenant B (quiet), `GET /api/v1/coupons?limit=15`:\n")
    print("| phase | requests | slots missed | errors | p50 ms | p95 ms | max ms |")
    print("|---|---|---|---|---|---|---|")
    for phase, row in (("idle", idle), ("during", during)):
        print(
            f"| {phase} | {row['count']} | {row['missed']} | {row['errors']} | {row['p50']:.1f} | "
            f"{row['p95']:.1f} | {row['max']:.1f} |"
        )
    print(
        f"| during / idle | | | | {during['p50'] / idle['p50']:.1f}x | "
        f"{during['p95'] / idle['p95']:.1f}x | {during['max'] / idle['max']:.1f}x |"
    )
    statuses = {phase: dict(result[phase]["statuses"]) for phase in ("idle", "during")}
    print(f"\nB's statuses: {statuses}")
    print("\nTenant A (noisy), its answers during the phase:\n")
    columns = ["2xx", "4xx (not 429)", "429", "503", "other 5xx", "no answer"]
    print("| abuse | requests | " + " | ".join(columns) + " | median s | max s | statuses |")
    print("|---|---|" + "---|" * len(columns) + "---|---|---|")
    for abuse, record in result["noisy"].items():
        answered, seconds = record["answered"], record["seconds"]
        classes = answer_classes(answered)
        median = f"{statistics.median(seconds):.2f}" if seconds else "-"
        longest = f"{max(seconds):.2f}" if seconds else "-"
        print(
            f"| {abuse} | {sum(answered.values())} | "
            + " | ".join(str(classes.get(column, 0)) for column in columns)
            + f" | {median} | {longest} | {dict(sorted(answered.items()))} |"
        )
    setup = result["setup"]
    print(
        f"\nA's setup: {len(setup['channels'])} channels, answers {dict(setup['answered'])}; "
        f"per-key limit {setup['limit']}/min"
    )
    print(f"receivers: {result['receivers']}")
    print(f"database after the phase: {result['database']}")
    print("server log errors (by exception):")
    for name, counts in result["logs"].items():
        print(f"- {name}: " + ("; ".join(f"{n} x {what}" for what, n in counts.most_common())
                              or "none"))  # fmt: skip


def summary(results: list[dict]) -> None:
    print("\n## Tenant B's coupon list, idle and during, per checkout (ms)\n")
    print(
        "| checkout | idle p50 / p95 / max | during p50 / p95 / max | during / idle p50, p95, "
        "max | B's requests (slots missed), errors during | A's answers (all abuses) |"
    )
    print("|---|---|---|---|---|---|")
    for result in results:
        idle, during = figures(result["idle"]), figures(result["during"])
        answered = sum((record["answered"] for record in result["noisy"].values()), Counter())
        classes = answer_classes(answered)
        print(
            f"| {Path(result['checkout']).name} ({result['commit']}) | "
            f"{idle['p50']:.0f} / {idle['p95']:.0f} / {idle['max']:.0f} | "
            f"{during['p50']:.0f} / {during['p95']:.0f} / {during['max']:.0f} | "
            f"{during['p50'] / idle['p50']:.1f}x, {during['p95'] / idle['p95']:.1f}x, "
            f"{during['max'] / idle['max']:.1f}x | {during['count']} ({during['missed']}), "
            f"{during['errors']} errors | "
            + ", ".join(f"{name} {n}" for name, n in sorted(classes.items()))
            + " |"
        )


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--checkout",
        type=Path,
        action="append",
        default=[],
        help="another checkout to run first (repeatable), e.g. the code before a change",
    )
    parser.add_argument("--idle", type=float, default=20.0, help="seconds of B alone")
    parser.add_argument("--during", type=float, default=45.0, help="seconds of B beside A")
    parser.add_argument("--quiet-threads", type=int, default=2, help="B's threads (a key each)")
    parser.add_argument("--quiet-rate", type=float, default=1.5, help="B's requests/s per thread")
    parser.add_argument(
        "--noisy-share", type=float, default=0.9, help="A's requests/min as a share of its limit"
    )
    parser.add_argument(
        "--abuses",
        type=lambda value: value.split(","),
        default=list(ABUSES),
        help="which of A's abuses run, each at a quarter of A's share (default: all four)",
    )
    parser.add_argument("--test-threads", type=int, default=4, help="A's test-send threads")
    parser.add_argument("--search-threads", type=int, default=2, help="A's search threads")
    parser.add_argument("--channels", type=int, default=20, help="A's channels (or its cap)")
    parser.add_argument("--coupons", type=int, default=3000, help="A's coupons")
    parser.add_argument("--events", type=int, default=3000, help="A's events to recover")
    parser.add_argument("--web-concurrency", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--worker-concurrency", type=int, default=2, help="Celery processes")
    args = parser.parse_args()
    for name in ("DATABASE_URL", "REDIS_URL"):
        if not os.environ.get(name):
            sys.exit(f"{name} is not set: run me under bin/with-test-services")
    if not set(args.abuses) <= set(ABUSES):
        sys.exit(f"--abuses: a comma-separated subset of {','.join(ABUSES)}")
    if not 0 < args.noisy_share <= 1:
        sys.exit("--noisy-share must be in (0, 1]: A stays within its limit")

    started = datetime.now(UTC)
    print(
        f"noisy neighbour, {started:%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs, load {load()}; "
        f"idle {args.idle:g} s, during {args.during:g} s; B {args.quiet_threads} threads x "
        f"{args.quiet_rate:g}/s; A at {args.noisy_share:.0%} of its per-key limit, abuses "
        f"{','.join(args.abuses)}",
        flush=True,
    )
    results = []
    for number, checkout in enumerate([*(path.resolve() for path in args.checkout), REPO]):
        result = run_checkout(number, checkout, args)
        report(result)
        results.append(result)
    summary(results)
    print(f"\nfinished {datetime.now(UTC):%H:%M} UTC, load {load()}")


if __name__ == "__main__":
    main()
