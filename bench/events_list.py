"""Event-journal benchmark: list latency at 10,000 and 2,000,000 events, and prune throughput.

Run against a throwaway PostgreSQL (see docs/benchmarks/events.md):

    bin/with-test-services .venv/bin/python bench/events_list.py

Rows are generated with INSERT ... SELECT generate_series. Generated history uses synthetic,
negative transaction ids (one per event, interleaved across stores) so that all of it lies
below the live transaction horizon, as old committed history does in production.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
os.environ.setdefault("API_RATE_LIMIT_PER_MINUTE", "1000000000")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from events.cursors import JournalCursor, JournalPosition, cursor_encode  # noqa: E402
from events.services import events_prune  # noqa: E402
from tests.factories import MembershipFactory, StoreFactory, UserFactory, make_api_key  # noqa: E402

OTHER_STORES = 2


def generate(store_id: int, count: int, *, slot: int, slots: int, old: int = 0) -> None:
    """`count` events in `store_id`; the first `old` of them are 40 days old."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO events_event
                (id, store_id, type, version, subject_type, subject_id, data, occurred_at, txid)
            SELECT
                'evt_' || upper(lpad(to_hex(%(slot)s::bigint << 40 | g), 26, '0')),
                %(store)s,
                CASE WHEN g %% 4 = 0 THEN 'order.completed' ELSE 'coupon.updated' END,
                1,
                CASE WHEN g %% 4 = 0 THEN 'order' ELSE 'coupon' END,
                (g %% 5000)::text,
                CASE WHEN g %% 4 = 0 THEN '{"total_cents": 1999, "currency": "USD"}'::jsonb
                     ELSE '{}'::jsonb END,
                CASE WHEN g <= %(old)s THEN now() - interval '40 days'
                     ELSE now() - interval '20 days' + g * interval '1 millisecond' END,
                -10000000000 + g * %(slots)s + %(slot)s
            FROM generate_series(1, %(count)s) AS g
            """,
            {"store": store_id, "count": count, "slot": slot, "slots": slots, "old": old},
        )


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def middle_position(store_id: int) -> JournalPosition:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM events_event WHERE store_id = %s", [store_id])
        (total,) = cursor.fetchone()
        # Setup only (not measured): find the event halfway through the journal.
        cursor.execute(
            "SELECT txid, id FROM events_event WHERE store_id = %s ORDER BY txid, id "
            "OFFSET %s LIMIT 1",
            [store_id, total // 2],
        )
        txid, event_id = cursor.fetchone()
    return JournalPosition(txid=txid, event_id=event_id)


def measure(client, cases: list[tuple[str, object, dict]], requests: int) -> list[dict]:
    """Times every case in interleaved rounds, so load from other processes on the shared
    machine spreads over all cases alike instead of biasing whichever ran during a spike."""
    for _, store, params in cases:
        for _ in range(20):  # warm-up
            client.get("/api/v2/events", params, HTTP_X_STORE=store.slug)
    samples: dict[str, list[float]] = {label: [] for label, _, _ in cases}
    items: dict[str, int] = {}
    for _ in range(requests):
        for label, store, params in cases:
            started = time.perf_counter()
            response = client.get("/api/v2/events", params, HTTP_X_STORE=store.slug)
            samples[label].append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, response.content
            items[label] = len(response.json()["data"])
    return [
        {
            "label": label,
            "p50": statistics.median(samples[label]),
            "p99": percentile(samples[label], 0.99),
            "items": items[label],
        }
        for label, _, _ in cases
    ]


def explain(store_id: int, position: JournalPosition) -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
            "SELECT * FROM events_event WHERE store_id = %s AND txid >= %s "
            "AND NOT (txid = %s AND id <= %s) "
            "AND txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint "
            "ORDER BY txid, id LIMIT 51",
            [store_id, position.txid, position.txid, position.event_id],
        )
        return "\n".join(row[0] for row in cursor.fetchall())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=2_000_000)
    parser.add_argument("--others", type=int, default=250_000, help="events per other store")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--prune", type=int, default=200_000, help="old events to prune")
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    user = UserFactory()
    small, large = StoreFactory(slug="bench-small"), StoreFactory(slug="bench-large")
    others = [StoreFactory(slug=f"bench-other-{n}") for n in range(OTHER_STORES)]
    for store in (small, large, *others):
        MembershipFactory(user=user, store=store)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_api_key(user)}")

    slots = 2 + OTHER_STORES
    started = time.perf_counter()
    generate(small.pk, args.small, slot=0, slots=slots)
    generate(large.pk, args.large, slot=1, slots=slots, old=args.prune)
    for n, store in enumerate(others):
        generate(store.pk, args.others, slot=2 + n, slots=slots)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE events_event")
        cursor.execute("SELECT count(*) FROM events_event")
        (total_rows,) = cursor.fetchone()
    print(f"generated {total_rows} events in {time.perf_counter() - started:.1f}s")

    cases = []
    for store, size in ((small, args.small), (large, args.large)):
        middle = middle_position(store.pk)
        cases.append((f"{size} head", store, {"limit": 50}))
        # A wildcard walks the store's positions and filters on the type (no type index).
        for filters in ({}, {"type": "order.completed"}, {"type": "order.*"}):
            cursor = cursor_encode(
                store_id=store.pk, filters=filters, cursor=JournalCursor(middle, None)
            )
            label = " ".join([f"{size} middle", *(f"{k}={v}" for k, v in filters.items())])
            cases.append((label, store, {"limit": 50, **filters, "cursor": cursor}))
    results = measure(client, cases, args.requests)
    print(f"\n{'journal / start':45} {'p50 ms':>8} {'p99 ms':>8} {'items':>6}")
    for r in results:
        print(f"{r['label']:45} {r['p50']:8.2f} {r['p99']:8.2f} {r['items']:6d}")
    for start in ("head", "middle"):
        small_p50 = next(r["p50"] for r in results if r["label"] == f"{args.small} {start}")
        large_p50 = next(r["p50"] for r in results if r["label"] == f"{args.large} {start}")
        ratio = large_p50 / small_p50
        print(
            f"p50 ratio {args.large} / {args.small} from the {start}: {ratio:.2f} (target <= 1.5)"
        )
    print(
        f"\nplan of the middle page at {args.large}:\n"
        + explain(large.pk, middle_position(large.pk))
    )

    started = time.perf_counter()
    deleted = events_prune(batch_size=1_000)
    elapsed = time.perf_counter() - started
    print(f"\nprune: {deleted} events in {elapsed:.1f}s = {deleted / elapsed:,.0f} events/s")


if __name__ == "__main__":
    main()
