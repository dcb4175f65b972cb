"""Converting a populated journal to day partitions: the real migrations
(webhooks 0012, events 0003, webhooks 0013) run on 1,000,000 events with their deliveries and
attempts while a writer records events and a reader pages a store's journal, and the bench
reports how long each table was locked and what the writer and the reader waited.

Run against a throwaway PostgreSQL (it makes and drops a database of its own):

    bin/with-test-services .venv/bin/python bench/events_conversion.py --events 1000000

The figures are relative to the same writer and reader just before the migrations, measured
in the same run (a shared machine's absolute times drift); docs/benchmarks/events.md records
them.
"""

import argparse
import logging
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
os.environ.setdefault("LOG_LEVEL", "WARNING")

DATABASE = "bench_events_conversion"
PLAIN = [("events", "0002_event_positions"), ("webhooks", "0011_channels")]
PARTITIONED = [("events", "0003_partitioned_by_day"), ("webhooks", "0013_partitioned_by_day")]
STORES = 1_000


def database_url(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def stores_seed() -> None:
    """The stores, each with a disabled channel (its deliveries are kept, never sent); their
    tables are the same before and after the partitioning, so the models write them."""
    from stores.models import Store
    from webhooks.models import WebhookChannel

    stores = Store.objects.bulk_create(
        Store(name=f"store {n}", slug=f"store-{n}") for n in range(STORES)
    )
    WebhookChannel.objects.bulk_create(
        WebhookChannel(
            store=store,
            url=f"https://hooks.example.com/{store.pk}",
            enabled=False,
            event_types=["order.completed"],
        )
        for store in stores
    )


def seed(sql, events: int, days: int) -> None:
    """`events` events over `days` days with one delivery each, and an attempt for every
    tenth delivery, as the schema before the partitioning keeps them."""
    chunk = 200_000
    for start in range(0, events, chunk):
        stop = min(start + chunk, events)
        sql(f"""insert into events_event (id, store_id, type, version, subject_type, subject_id,
            data, occurred_at, txid)
            select 'evt_' || lpad(g::text, 26, '0'),
            (select min(id) from stores_store) + g % {STORES},
            'order.completed', 1, 'order', g::text, '{{"total_cents": 1200}}',
            now() - ((g::float / {events}) * interval '{days} days'), -{events} + g
            from generate_series({start + 1}, {stop}) g""")
        sql(f"""insert into webhooks_webhookdelivery (id, store_id, event_id, event_type,
            channel_id, destination_origin, status, attempts, created_at, updated_at)
            select gen_random_uuid(), e.store_id, e.id, e.type, d.id, 'https://hooks.example.com',
            'succeeded', 1, e.occurred_at, e.occurred_at
            from events_event e join webhooks_webhookchannel d on d.store_id = e.store_id
            where e.id > 'evt_' || lpad({start}::text, 26, '0')
              and e.id <= 'evt_' || lpad({stop}::text, 26, '0')""")
        print(f"  seeded {stop:,} events", flush=True)
    sql("""insert into webhooks_webhookdeliveryattempt (delivery_id, number, origin, started_at,
        response_status, error) select id, 1, destination_origin, created_at, 200, ''
        from webhooks_webhookdelivery where random() < 0.1""")
    for table in ("events_event", "webhooks_webhookdelivery", "webhooks_webhookdeliveryattempt"):
        sql(f"vacuum analyze {table}")


class Load:
    """A writer recording events and a reader paging one store's journal, each on its own
    connection, timing every statement."""

    def __init__(self, url: str, store_id: int):
        self.url, self.store_id = url, store_id
        self.stop = threading.Event()
        self.timings = {"write": [], "read": []}
        self.errors = []

    def run(self, kind: str):
        with psycopg.connect(self.url, autocommit=True) as conn:
            n = 0
            while not self.stop.is_set():
                n += 1
                started = time.monotonic()
                try:
                    if kind == "write":
                        conn.execute(
                            "insert into events_event (id, store_id, type, version, subject_type,"
                            " subject_id, data, occurred_at) values (%s, %s, 'order.completed', 1,"
                            " 'order', %s, '{}', now())",
                            (f"evt_w{threading.get_ident() % 10**6:06d}{n:019d}", self.store_id, n),
                        )
                    else:
                        conn.execute(
                            "select id from events_event where store_id = %s "
                            "order by txid desc, id desc limit 50",
                            (self.store_id,),
                        ).fetchall()
                except psycopg.Error as error:  # reported, never hidden
                    self.errors.append(f"{kind}: {error}")
                self.timings[kind].append((started, time.monotonic() - started))
                time.sleep(0.005)

    def window(self, kind: str, start: float, end: float) -> list[float]:
        return [took for at, took in self.timings[kind] if start <= at <= end]


def summary(values: list[float]) -> str:
    if not values:
        return "none"
    values = sorted(values)
    p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
    return (
        f"{len(values):,} statements, p50 {statistics.median(values) * 1000:.1f} ms, "
        f"p99 {p99 * 1000:.1f} ms, max {values[-1] * 1000:.0f} ms"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=30)
    args = parser.parse_args()
    server = os.environ["DATABASE_URL"]
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"drop database if exists {DATABASE}")
        admin.execute(f"create database {DATABASE}")
    url = database_url(server, DATABASE)
    os.environ["DATABASE_URL"] = url
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    def migrate(targets):
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(targets)

    call_command("migrate", verbosity=0)
    migrate(PLAIN)
    print(f"PostgreSQL {connection.pg_version}; the schema before the partitioning")
    started = time.monotonic()
    stores_seed()
    with psycopg.connect(url, autocommit=True) as conn:
        seed(conn.execute, args.events, args.days)
        store_id = conn.execute("select min(id) from stores_store").fetchone()[0]
        print(f"seeded {args.events:,} events in {time.monotonic() - started:.0f} s")

    locks = []

    class Locked(logging.Handler):
        def emit(self, record):
            locks.append(record.getMessage())

    partitions_logger = logging.getLogger("core.database.partitions")
    partitions_logger.setLevel(logging.INFO)
    partitions_logger.addHandler(Locked())

    load = Load(url, store_id)
    threads = [threading.Thread(target=load.run, args=(kind,)) for kind in ("write", "read")]
    for thread in threads:
        thread.start()
    time.sleep(10)  # the reference: the same load before the migrations
    before_end = time.monotonic()
    migrate(PARTITIONED)
    after_start = time.monotonic()
    time.sleep(2)
    load.stop.set()
    for thread in threads:
        thread.join()
    connection.close()

    print(
        f"migrations (webhooks 0012, events 0003, webhooks 0013): {after_start - before_end:.1f} s"
    )
    for line in locks:
        print(f"  {line}")
    for kind in ("write", "read"):
        print(f"{kind}, 10 s before: {summary(load.window(kind, 0, before_end))}")
        print(f"{kind}, during: {summary(load.window(kind, before_end, after_start))}")
    print(f"errors: {len(load.errors)}", *load.errors[:5], sep="\n  ")
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"drop database {DATABASE}")


if __name__ == "__main__":
    main()
