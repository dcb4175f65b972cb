"""Events partitioned by day, measured on tables of its own: what converting a populated
journal costs in lock time, and what one day of retention costs as a batched delete against
dropping that day's partition. docs/decisions/events.md "Partitioned by day" rests on these
figures; docs/benchmarks/events.md records them.

Run against a throwaway PostgreSQL:

    bin/with-test-services .venv/bin/python bench/events_partitioning.py --events 1000000

It works on its own tables (`bench_ev*`, `bench_dl*`) shaped like events_event (columns and
the four journal indexes) and webhooks_webhookdelivery (its event foreign key), not on the
application's, and drops them at the end.
"""

import argparse
import os
import threading
import time

import psycopg

COLUMNS = """id varchar(30) not null, store_id integer not null, type varchar(120) not null,
    version smallint not null, subject_type varchar(32) not null, subject_id varchar(100) not null,
    data jsonb not null, occurred_at timestamptz not null, txid bigint not null"""
INDEXES = {  # events_event's, minus its primary key
    "occurred": "(occurred_at)",
    "pos": "(store_id, txid, id)",
    "type_pos": "(store_id, type, txid, id)",
    "subject_pos": "(store_id, subject_type, subject_id, txid, id)",
}


def seed(sql, table: str, events: int, days: int) -> None:
    """`events` events of 1,000 stores spread evenly over the last `days` days, each with one
    delivery referencing it as webhooks_webhookdelivery does (ON DELETE CASCADE)."""
    sql(f"create table {table} ({COLUMNS}, primary key (id))")
    sql(f"""insert into {table} select 'evt_' || lpad(g::text, 26, '0'), g % 1000,
        'order.completed', 1, 'order', (g / 3)::text, '{{"total_cents": 1200}}',
        now() - (g::float / {events} * interval '{days} days'), g
        from generate_series(1, {events}) g""")
    for name, columns in INDEXES.items():
        sql(f"create index {table}_{name} on {table} {columns}")
    sql(f"""create table bench_dl (id bigserial primary key, event_id varchar(30) not null
        references {table} (id) on delete cascade, status varchar(16) not null)""")
    sql("create index bench_dl_event on bench_dl (event_id)")
    sql(f"insert into bench_dl (event_id, status) select id, 'succeeded' from {table}")
    sql(f"vacuum analyze {table}")
    sql("vacuum analyze bench_dl")


def timed(step):
    started = time.monotonic()
    step()
    return time.monotonic() - started


def convert_by_attaching(conn, sql) -> dict:
    """The populated table becomes the partitioned table's first partition: every scan and
    index build runs before the ACCESS EXCLUSIVE lock, which only swaps names and attaches."""
    low, day_after = conn.execute(
        "select min(occurred_at), date_trunc('day', now(), 'UTC') + interval '1 day' from bench_ev"
    ).fetchone()
    figures = {}
    # Writers go on during these (SHARE UPDATE EXCLUSIVE, and CREATE INDEX CONCURRENTLY).
    figures["check constraint, validated (writes go on)"] = timed(
        lambda: (
            sql(
                "alter table bench_ev add constraint bench_ev_bound check "
                f"(occurred_at >= '{low.isoformat()}' and occurred_at < '{day_after.isoformat()}') "
                "not valid"
            ),
            sql("alter table bench_ev validate constraint bench_ev_bound"),
        )
    )
    figures["unique (id, occurred_at) built concurrently (writes go on)"] = timed(
        lambda: sql("create unique index concurrently bench_ev_key on bench_ev (id, occurred_at)")
    )
    figures["deliveries' event foreign key dropped"] = timed(
        lambda: sql("alter table bench_dl drop constraint bench_dl_event_id_fkey")
    )

    def swap():
        with conn.transaction():
            sql("set local lock_timeout = '2s'")
            sql("lock table bench_ev in access exclusive mode")
            sql("alter table bench_ev rename to bench_ev_legacy")
            sql("alter table bench_ev_legacy drop constraint bench_ev_pkey")
            sql(
                "alter table bench_ev_legacy add constraint bench_ev_legacy_pkey "
                "primary key using index bench_ev_key"
            )
            sql(
                f"create table bench_ev ({COLUMNS}, primary key (id, occurred_at)) "
                "partition by range (occurred_at)"
            )
            sql(
                "alter table bench_ev attach partition bench_ev_legacy for values from "
                f"('{low.isoformat()}') to ('{day_after.isoformat()}')"
            )
            for ahead in range(3):  # tomorrow and two more days
                sql(
                    f"create table bench_ev_d{ahead} partition of bench_ev for values from "
                    f"('{day_after.isoformat()}'::timestamptz + interval '{ahead} day') to "
                    f"('{day_after.isoformat()}'::timestamptz + interval '{ahead + 1} day')"
                )

    figures["ACCESS EXCLUSIVE: rename, primary key, attach, 3 days ahead"] = timed(swap)

    def parent_indexes():
        for name, columns in INDEXES.items():
            sql(f"create index bench_ev_p_{name} on only bench_ev {columns}")
            sql(f"alter index bench_ev_p_{name} attach partition bench_ev_{name}")
            for ahead in range(3):  # empty partitions: instant
                sql(f"create index bench_ev_d{ahead}_{name} on bench_ev_d{ahead} {columns}")
                sql(f"alter index bench_ev_p_{name} attach partition bench_ev_d{ahead}_{name}")

    figures["parent indexes from the existing ones (no rebuild)"] = timed(parent_indexes)
    return figures


def convert_by_copying(sql) -> dict:
    """The alternative: a new partitioned table filled by INSERT ... SELECT; the old table
    must not change meanwhile, so writers wait for all of it (indexes included)."""
    sql(f"create table bench_copy ({COLUMNS}, primary key (id, occurred_at))")

    def copy():
        sql("insert into bench_copy select * from bench_ev_legacy")
        for name, columns in INDEXES.items():
            sql(f"create index bench_copy_{name} on bench_copy {columns}")

    seconds = timed(copy)
    sql("drop table bench_copy")
    return {"copy and index (writers wait all along)": seconds}


def retention_by_batched_delete(sql, conn, day_start, batch: int) -> tuple[int, float]:
    """Today's retention: batches of `batch` events, each deleting its deliveries first."""
    deleted, started = 0, time.monotonic()
    while True:
        with conn.transaction():
            ids = [
                row[0]
                for row in conn.execute(
                    "select id from bench_ev_legacy where occurred_at < %s "
                    "order by occurred_at limit %s for update skip locked",
                    (day_start, batch),
                )
            ]
            if not ids:
                break
            conn.execute("delete from bench_dl where event_id = any(%s)", (ids,))
            conn.execute("delete from bench_ev_legacy where id = any(%s)", (ids,))
        deleted += len(ids)
    return deleted, time.monotonic() - started


def retention_by_drop(sql, conn, low, high) -> tuple[int, float]:
    """One day as a partition of its own, dropped with its deliveries' partition: the per-store
    prune marks are read first (the day's rows no longer change), then one short transaction
    drops both."""
    sql("create table bench_ev_day (like bench_ev including all)")
    sql("create table bench_dl_day (like bench_dl including all)")
    sql(
        "insert into bench_ev_day select * from bench_ev_legacy "
        f"where occurred_at >= '{low.isoformat()}' and occurred_at < '{high.isoformat()}'"
    )
    sql(
        "insert into bench_dl_day select * from bench_dl "
        "where event_id in (select id from bench_ev_day)"
    )
    sql("vacuum analyze bench_ev_day")
    count = conn.execute("select count(*) from bench_ev_day").fetchone()[0]
    started = time.monotonic()
    conn.execute(
        "select distinct on (store_id) store_id, txid, id from bench_ev_day "
        "order by store_id, txid desc, id desc"
    ).fetchall()
    with conn.transaction():
        sql("set local lock_timeout = '2s'")
        sql("drop table bench_dl_day")
        sql("drop table bench_ev_day")
    return count, time.monotonic() - started


def drop_waits_for_readers(url) -> str:
    """Whether dropping a partition waits for an open transaction that read the parent."""
    reader = psycopg.connect(url)
    reader.execute("select count(*) from bench_ev where store_id = 1")
    outcome = {}

    def drop():
        with psycopg.connect(url, autocommit=True) as dropper:
            dropper.execute("set lock_timeout = '500ms'")
            try:
                dropper.execute("drop table bench_ev_d2")
                outcome["drop"] = "did not wait"
            except psycopg.errors.LockNotAvailable:
                outcome["drop"] = "waited for the reader (lock_timeout)"

    thread = threading.Thread(target=drop)
    thread.start()
    thread.join()
    reader.rollback()
    reader.close()
    return outcome["drop"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--batch", type=int, default=1_000)
    args = parser.parse_args()
    url = os.environ["DATABASE_URL"]
    conn = psycopg.connect(url, autocommit=True)
    sql = conn.execute
    print("PostgreSQL", sql("show server_version").fetchone()[0])
    for table in ("bench_dl", "bench_ev", "bench_ev_legacy", "bench_copy"):
        sql(f"drop table if exists {table} cascade")
    seconds = timed(lambda: seed(sql, "bench_ev", args.events, args.days))
    print(f"seeded {args.events:,} events and deliveries over {args.days} days in {seconds:.1f} s")
    for step, seconds in convert_by_attaching(conn, sql).items():
        print(f"convert by attaching: {step}: {seconds * 1000:,.0f} ms")
    for step, seconds in convert_by_copying(sql).items():
        print(f"convert by copying: {step}: {seconds * 1000:,.0f} ms")
    oldest = sql("select min(occurred_at) from bench_ev_legacy").fetchone()[0]
    one_day = sql("select %s::timestamptz + interval '1 day'", (oldest,)).fetchone()[0]
    # The same day's volume each way: first as its own partition (copied out, then dropped),
    # then deleted in batches from the table as today.
    count, seconds = retention_by_drop(sql, conn, oldest, one_day)
    print(f"retention, one day ({count:,} events) as a partition drop: {seconds * 1000:,.0f} ms")
    count, seconds = retention_by_batched_delete(sql, conn, one_day, args.batch)
    print(
        f"retention, one day ({count:,} events) in batches of {args.batch:,}: "
        f"{seconds * 1000:,.0f} ms ({count / seconds:,.0f} events/s)"
    )
    print("dropping a partition while a reader's transaction is open:", drop_waits_for_readers(url))
    for table in ("bench_dl", "bench_ev"):
        sql(f"drop table if exists {table} cascade")


if __name__ == "__main__":
    main()
