"""The journal at scale: page time, daily retention and record rate at 10,000,000
events over 30 days across 1,000 stores, each event with one succeeded webhook delivery and its
attempt (a channel per store), as production keeps them.

Run against a throwaway PostgreSQL and Redis (docs/benchmarks/events.md records the figures):

    bin/with-test-services .venv/bin/python bench/journal_scale.py \
        --events 10000000 --days 30 --stores 1000 [--compare /path/to/checkout/before]

Each checkout (this one, and the `--compare` one when given) gets databases of its own, created
and migrated here and dropped at the end: a large one (`--events`) and a small one (`--small`
events, in as many stores as keep the measured store's history the same length, so only the
journal's total differs). Rows come from INSERT ... SELECT generate_series in chunks, with
synthetic negative txids (below the live transaction horizon, as old history is), then VACUUM
ANALYZE. A partitioned events table (pg_partitioned_table) gets its days first
(events.partitions.partitions_ensure). Measured in alternating rounds, every step in a fresh
process of the checkout's own Python and code (this file run with `--worker`), medians printed:

1. `GET /api/v2/events` of one store (API key, default limit) from the head, a middle cursor and
   the newest page (a cursor 50 events before the end), large against small: goal <= 1.5x;
2. the daily retention: `events_prune(now=...)` with `now` such that exactly one more day is
   past the window (the oldest seeded day first), its time and events removed, after/before;
3. events recorded per second through `events.services.record`, one per transaction, into a
   store with an enabled channel (so a delivery is created): after/before, goal >= 0.9x.
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parent.parent
CHECKOUT = Path(os.environ.get("JOURNAL_BENCH_CHECKOUT", REPO))
TYPES = ["coupon.updated", "order.completed"]
ORIGIN = "http://127.0.0.1:9"  # the discard port: nothing is sent, a drain would fail fast
CASES = ("head", "middle", "newest")
CHUNK = 100_000  # events per INSERT of the seed
ORDER = {"total_cents": 1999, "currency": "USD"}
WORKER_ENV = {
    "DJANGO_SETTINGS_MODULE": "config.settings.test",
    "API_RATE_LIMIT_PER_MINUTE": "1000000000",
    "LOG_LEVEL": "WARNING",
    "STOREFRONT_TEST_WORKER": "gw0",  # test.py then takes the Redis databases given here
}


# In the checkout's process (`--worker`).


def django_setup():
    sys.path.insert(0, str(CHECKOUT))
    import django

    django.setup()
    from django.conf import settings

    # A connection kept, as in production (base.py), not the test settings' one per request:
    # the time is the app's and its queries', and cpu_clock can follow the backend.
    settings.DATABASES["default"]["CONN_MAX_AGE"] = None


def cpu_clock():
    """CPU seconds of this process and its PostgreSQL backend: steadier than wall time here."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("select pg_backend_pid()")
        (pid,) = cursor.fetchone()

    def clock():
        with open(f"/proc/{pid}/schedstat") as schedstat:  # first field: ns on a CPU
            return time.process_time() + int(schedstat.read().split()[0]) / 1e9

    return clock


# Seeded columns, "column: SQL expression" (g: the event's number; ev, dl: the rows just
# inserted). A checkout's table takes those it has; one it requires and this lacks stops the seed.
EVENT = """id: 'evt_' || upper(lpad(to_hex(g), 26, '0')); version: 1
store_id: (%(stores)s::int[])[1 + g %% %(n)s]; txid: -10000000000 + g
type: case when g %% 4 = 0 then 'order.completed' else 'coupon.updated' end
subject_type: case when g %% 4 = 0 then 'order' else 'coupon' end; subject_id: (g %% 5000)::text
data: case when g %% 4 = 0 then '{"total_cents": 1999, "currency": "USD"}'::jsonb else '{}' end
occurred_at: %(start)s::timestamptz + (g - 1) * %(step)s * interval '1 second'"""
DELIVERY = f"""id: lpad(to_hex(ev.txid + 10000000000), 32, '0')::uuid; store_id: ev.store_id
event_id: ev.id; event_occurred_at: ev.occurred_at; event_type: ev.type; channel_id: c.id
destination_origin: '{ORIGIN}'; status: 'succeeded'; attempts: 1; response_status: 204
response_body: ''; created_at: ev.occurred_at; updated_at: ev.occurred_at"""
ATTEMPT = f"""delivery_id: dl.id; delivery_event_occurred_at: dl.created_at; number: 1
origin: '{ORIGIN}'; started_at: dl.created_at; finished_at: dl.created_at; duration_ms: 40
response_status: 204; response_body: ''; error: ''"""
CHANNELS = "webhooks_webhookchannel c on c.store_id = ev.store_id"
SERIES = "from generate_series(%(lo)s, %(hi)s) g"


def insert_sql(cursor, table: str, spec: str, source: str) -> str:
    """INSERT INTO table (...) SELECT <the spec's expressions of the table's columns> source."""
    values = dict(item.split(": ", 1) for line in spec.splitlines() for item in line.split("; "))
    # Column -> whether an INSERT must give it (NOT NULL, no default, not an identity).
    cursor.execute(
        "select column_name, is_nullable = 'NO' and column_default is null and is_identity = 'NO'"
        " from information_schema.columns where table_name = %s",
        [table],
    )
    have = dict(cursor.fetchall())
    missing = [name for name, required in have.items() if required and name not in values]
    if missing:
        raise SystemExit(f"{table}: the seed does not fill required columns {missing}")
    names = [name for name in values if name in have]
    selected = ", ".join(values[name] for name in names)
    return f"insert into {table} ({', '.join(names)}) select {selected} {source}"


def prepare(events: int, stores: int, days: int) -> dict:
    from django.core.management import call_command
    from django.db import connection, transaction

    call_command("migrate", verbosity=0)
    from tests import factories

    with transaction.atomic():
        user = factories.UserFactory()
        shops = [factories.StoreFactory(slug=f"bench-{n}") for n in range(stores)]
        for store in shops:
            factories.WebhookChannelFactory(store=store, url=f"{ORIGIN}/hook", event_types=TYPES)
        for store in {shops[0], shops[-1]}:  # the measured store, the recording one
            factories.MembershipFactory(user=user, store=store)
        key = factories.make_api_key(user)
    today = datetime.datetime.now(datetime.UTC).date()
    first = today - datetime.timedelta(days=days)
    ev, dl, at = "events_event", "webhooks_webhookdelivery", "webhooks_webhookdeliveryattempt"
    with connection.cursor() as cursor:
        cursor.execute("select 1 from pg_partitioned_table where partrelid = %s::regclass", [ev])
        partitioned = cursor.fetchone() is not None
        if partitioned:  # a row of a day without its partition would fail
            from events.partitions import partitions_ensure

            partitions_ensure(first, today + datetime.timedelta(days=2))
        statement = (
            f"with ev as ({insert_sql(cursor, ev, EVENT, SERIES)} returning *), "
            f"dl as ({insert_sql(cursor, dl, DELIVERY, 'from ev join ' + CHANNELS)} returning *) "
            + insert_sql(cursor, at, ATTEMPT, "from dl")
        )
        ids, start = [s.pk for s in shops], datetime.datetime.combine(first, datetime.time())
        params = {"stores": ids, "n": stores, "start": start.replace(tzinfo=datetime.UTC)}
        params["step"] = days * 86400 / events  # seconds between two events
        started, database = time.monotonic(), connection.settings_dict["NAME"]
        for lo in range(1, events + 1, CHUNK):
            hi = min(events, lo + CHUNK - 1)
            cursor.execute(statement, {**params, "lo": lo, "hi": hi})
            if hi == events or hi % 1_000_000 < CHUNK:  # a progress line per million
                rate = hi / (time.monotonic() - started)
                print(f"  {database}: {hi:,}/{events:,} events ({rate:,.0f}/s)", file=sys.stderr)
        for table in (ev, dl, at):
            cursor.execute(f"vacuum analyze {table}")
    info = {"key": key, "store": shops[0].slug, "recorder": shops[-1].slug, "first": str(first)}
    return {**info, "partitioned": partitioned, "seconds": time.monotonic() - started}


def pages(key: str, slug: str, requests: int, explain: bool) -> dict:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from rest_framework.test import APIClient

    from events.models import Event

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")

    def get(params):
        response = client.get("/api/v2/events", params, HTTP_X_STORE=slug)
        assert response.status_code == 200, response.content
        return response.json()

    total = Event.objects.filter(store__slug=slug).count()
    # Setup, not timed: page through the public API to the middle and to 50 before the end.
    targets, cursors, seen, cursor = {"middle": total // 2, "newest": total - 50}, {}, 0, None
    for case, target in sorted(targets.items(), key=lambda item: item[1]):
        while seen < target:
            body = get({"limit": min(100, target - seen), **({"cursor": cursor} if cursor else {})})
            seen, cursor = seen + len(body["data"]), body["meta"]["next_cursor"]
        cursors[case] = cursor
    params = {"head": {}, **{case: {"cursor": c} for case, c in cursors.items()}}
    for case in CASES * 10:  # warm-up
        get(params[case])
    samples = {case: [] for case in CASES} | {f"{case} cpu": [] for case in CASES}
    clock = cpu_clock()
    for _ in range(requests):
        for case in CASES:
            cpu, started = clock(), time.perf_counter()
            items = len(get(params[case])["data"])
            samples[case].append((time.perf_counter() - started) * 1000)
            samples[f"{case} cpu"].append((clock() - cpu) * 1000)
            assert items == 50, (case, items)
    result = {label: statistics.median(times) for label, times in samples.items()}
    if explain:  # the middle page's journal query, as the checkout sends it
        with CaptureQueriesContext(connection) as queries:
            get(params["middle"])
        journal = [q["sql"] for q in queries if 'FROM "events_event"' in q["sql"]]
        query = max((sql for sql in journal if "LIMIT" in sql), key=len)
        with connection.cursor() as cursor:
            cursor.execute(f"explain (analyze, costs off, timing off, summary off) {query}")
            result["plan"] = "\n".join(row[0] for row in cursor.fetchall())
    return result


def records(slug: str, count: int) -> dict:
    from django.db import transaction

    from events.services import record
    from stores.models import Store

    store = Store.objects.get(slug=slug)

    def one(n):
        with transaction.atomic():
            record(store=store, type="order.completed", subject=("order", str(n)), data=ORDER)

    for n in range(50):  # warm-up
        one(n)
    clock = cpu_clock()
    cpu, started = clock(), time.perf_counter()
    for n in range(count):
        one(n)
    wall, cpu = time.perf_counter() - started, clock() - cpu
    return {"per_second": count / wall, "cpu_per_second": count / cpu}


def prune(first: str, day: int) -> dict:
    """Retention run at the moment seeded day `day` (1 = the oldest) is past the window."""
    from django.conf import settings

    from events.services import events_prune

    midnight = datetime.datetime.fromisoformat(first).replace(tzinfo=datetime.UTC)
    now = midnight + datetime.timedelta(days=settings.EVENTS_RETENTION_DAYS + day)
    started = time.perf_counter()
    removed = events_prune(now=now)
    return {"seconds": time.perf_counter() - started, "removed": removed}


def worker(action: str, kwargs: dict) -> None:
    django_setup()
    steps = {"prepare": prepare, "pages": pages, "records": records, "prune": prune}
    print(json.dumps(steps[action](**kwargs)))


# In the orchestrating process.


class Side:
    """One checkout's code with one database of its own (and Redis databases of its own)."""

    def __init__(self, name: str, checkout: Path, base_url: str, slot: int):
        self.name, self.checkout, self.slot = name, checkout, slot
        self.database = f"journal_{name.replace(' ', '_')}"
        self.url = urlunsplit(urlsplit(base_url)._replace(path=f"/{self.database}"))
        self.info: dict = {}

    def start(self, action: str, **kwargs) -> subprocess.Popen:
        redis = os.environ["REDIS_URL"].rsplit("/", 1)[0]
        metrics = tempfile.mkdtemp(dir=os.environ.get("STOREFRONT_TEST_WORKDIR"))
        env = {**os.environ, **WORKER_ENV, "JOURNAL_BENCH_CHECKOUT": str(self.checkout)}
        env.update(DATABASE_URL=self.url, PROMETHEUS_MULTIPROC_DIR=metrics)
        # Redis databases of its own: sides share no cache keys (drain markers, identities).
        env.update(REDIS_URL=f"{redis}/{2 * self.slot + 1}")
        env.update(STOREFRONT_TEST_CACHE_URL=f"{redis}/{2 * self.slot + 2}")
        command = [".venv/bin/python", __file__, "--worker", action, json.dumps(kwargs)]
        return subprocess.Popen(
            command, env=env, cwd=self.checkout, stdout=subprocess.PIPE, text=True
        )

    @staticmethod
    def finish(process: subprocess.Popen) -> dict:
        out, _ = process.communicate()
        if process.returncode:
            raise SystemExit(f"{process.args[3]} failed ({process.returncode})")
        return json.loads(out.splitlines()[-1])

    def run(self, action: str, **kwargs) -> dict:
        return self.finish(self.start(action, **kwargs))


def admin(base_url: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(statement)


def alternate(items: list, round_number: int) -> list:
    return items if round_number % 2 == 0 else list(reversed(items))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--stores", type=int, default=1_000)
    parser.add_argument("--small", type=int, default=10_000, help="events of the reference")
    parser.add_argument("--compare", type=Path, help="a checkout of the code before")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=100, help="per page and round")
    parser.add_argument("--records", type=int, default=1_000, help="events per round")
    args = parser.parse_args()
    base = os.environ["DATABASE_URL"]
    checkouts = {"after": REPO, **({"before": args.compare.resolve()} if args.compare else {})}
    # The small journal's stores each hold the large one's per-store history.
    small_stores = max(1, round(args.small * args.stores / args.events))
    sizes = {"large": (args.events, args.stores), "small": (args.small, small_stores)}
    keys = [(code, size) for code in checkouts for size in sizes]
    sides = {key: Side(" ".join(key), checkouts[key[0]], base, n) for n, key in enumerate(keys)}
    try:
        # Seeded side by side (not measured): each checkout's databases, all at once.
        running = {}
        for (_, size), side in sides.items():
            events, stores = sizes[size]
            admin(base, f"drop database if exists {side.database}")
            admin(base, f"create database {side.database}")
            print(f"{side.name}: {events:,} events, {stores:,} stores, {side.checkout}", flush=True)
            running[side] = side.start("prepare", events=events, stores=stores, days=args.days)
        for side, process in running.items():
            side.info = side.finish(process)
            seconds, partitioned = side.info["seconds"], side.info["partitioned"]
            print(f"{side.name}: seeded in {seconds:.0f} s, partitioned: {partitioned}")
        report(args, sides, checkouts)
    finally:
        for side in sides.values():
            admin(base, f"drop database if exists {side.database} with (force)")


def report(args, sides: dict, checkouts: dict) -> None:
    pages, plans, rates, prunes = {key: [] for key in sides}, {}, {}, {}
    for n in range(args.rounds):
        for key in alternate(list(sides), n):
            side, explain = sides[key], n == 0 and key[1] == "large"
            info = {"key": side.info["key"], "slug": side.info["store"]}
            pages[key].append(side.run("pages", **info, requests=args.requests, explain=explain))
            if explain:
                plans[key[0]] = pages[key][-1].pop("plan")
    for n in range(max(args.rounds, 5)):
        for code in alternate(list(checkouts), n):
            side = sides[code, "large"]
            result = side.run("records", slug=side.info["recorder"], count=args.records)
            rates.setdefault(code, []).append(result)
    for day in range(1, args.rounds + 1):  # one more day past the window each round
        for code in alternate(list(checkouts), day):
            side = sides[code, "large"]
            result = side.run("prune", first=side.info["first"], day=day)
            prunes.setdefault(code, []).append(result)

    def med(rows, field):
        return statistics.median(row[field] for row in rows)

    print(
        f"\n{args.events:,} events over {args.days} days in {args.stores:,} stores against ", end=""
    )
    print(f"{args.small:,}; medians of {args.rounds} rounds ({args.requests} requests each)\n")
    print("| code | page | small: wall, CPU ms | large: wall, CPU ms | large / small: wall, CPU |")
    print("|---|---|---|---|---|")
    for code, case in ((code, case) for code in checkouts for case in CASES):
        sw, lw = (med(pages[code, size], case) for size in ("small", "large"))
        sc, lc = (med(pages[code, size], f"{case} cpu") for size in ("small", "large"))
        print(f"| {code} | {case} | {sw:.2f}, {sc:.2f} | {lw:.2f}, {lc:.2f} ", end="")
        print(f"| **{lw / sw:.2f}**, **{lc / sc:.2f}** |")
    print("\n| code | one day's retention: s (rounds) | removed | recorded/s: wall, CPU (rounds) |")
    print("|---|---|---|---|")
    for code in checkouts:
        prune, rate = prunes[code], rates[code]
        print(f"| {code} | {med(prune, 'seconds'):.3f} (", end="")
        print(", ".join(f"{p['seconds']:.3f}" for p in prune), end=") | ")
        print(", ".join(format(p["removed"], ",") for p in prune), end=" | ")
        print(f"{med(rate, 'per_second'):.0f}, {med(rate, 'cpu_per_second'):.0f} (", end="")
        print(", ".join(f"{r['per_second']:.0f}" for r in rate), end=") |\n")
    if "before" in checkouts:
        ratio = med(prunes["after"], "seconds") / med(prunes["before"], "seconds")
        print(f"\nretention time after / before: {ratio:.4f}")
        for field in ("per_second", "cpu_per_second"):
            ratio = med(rates["after"], field) / med(rates["before"], field)
            print(f"record rate after / before ({field}): {ratio:.2f} (goal >= 0.9)")
    for code, plan in plans.items():  # up to the first scan, and how many scans there are
        lines = plan.splitlines()
        scans = [n for n, line in enumerate(lines) if " Scan " in line]
        shown = "\n".join(lines[: scans[0] + 2])
        print(f"\nmiddle page's journal query, {code}, large ({len(scans)} scans):\n{shown}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        worker(sys.argv[2], json.loads(sys.argv[3]))
    else:
        main()
