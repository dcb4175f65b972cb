"""Growth of the coupon and webhook-delivery lists: latency of page 1 and
of the last page with 1,000, 100,000 and 1,000,000 rows in the store.

Run against a throwaway PostgreSQL and Redis (see docs/benchmarks/coupons-growth.md):

    bin/with-test-services .venv/bin/python bench/list_growth.py

One store per size, each with that many coupons (all live) and that many deliveries (of one
event), generated with INSERT ... SELECT generate_series, then VACUUM ANALYZE until the visibility
map is set (`settle`: the state autovacuum leaves a table in once it stops changing). Requests go
through the whole stack in process (DRF's APIClient, test settings, real PostgreSQL and
Redis), the cases in alternating order each round; the table gives the median of all
requests per case. Then `EXPLAIN (ANALYZE, BUFFERS)` of each list's statements at the largest
size, as the requests sent them.
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
from django.test import override_settings  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from tests.factories import MembershipFactory, StoreFactory, UserFactory, make_api_key  # noqa: E402

PER_PAGE = 15
TARGET = 3.0  # page 1 at the largest size at most this many times its latency at the smallest


def generate(store_id: int, count: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO coupons_coupon (store_id, code, type, discount, "limit", times_used,
                store_wide, minimum_amount, expires_at, created_at, updated_at, deleted_at)
            SELECT %(store)s, 'GROW' || g, CASE WHEN g %% 2 = 0 THEN 'AMOUNT' ELSE 'PERCENTAGE' END,
                1 + g %% 50, NULL, 0, g %% 3 > 0, NULL, NULL, now(), now(), NULL
            FROM generate_series(1, %(count)s) AS g
            """,
            {"store": store_id, "count": count},
        )
        cursor.execute(
            """
            INSERT INTO events_event
                (id, store_id, type, version, subject_type, subject_id, data, occurred_at)
            VALUES ('evt_GROWTH' || %(store)s, %(store)s, 'coupon.updated', 1, 'coupon', '1',
                '{}'::jsonb, now())
            """,
            {"store": store_id},
        )
        cursor.execute(
            """
            INSERT INTO webhooks_webhookdelivery (id, store_id, event_id, event_type,
                destination_origin, status, attempts, response_status, response_body,
                created_at, updated_at)
            SELECT gen_random_uuid(), %(store)s, 'evt_GROWTH' || %(store)s, 'coupon.updated',
                'https://receiver.example', 'succeeded', 1, 200, 'ok',
                now() - interval '30 days' + g * interval '1 second', now()
            FROM generate_series(1, %(count)s) AS g
            """,
            {"store": store_id, "count": count},
        )


def settle(tables: tuple[str, ...], tries: int = 20) -> str:
    """VACUUM ANALYZE until (nearly) every page is all-visible, as autovacuum leaves a table
    that has stopped changing; returns the all-visible pages per table.

    One VACUUM right after the inserts may mark few or no pages all-visible: a snapshot still
    held meanwhile (autovacuum's ANALYZE of a table the bench wrote) keeps the new rows from
    being visible to all. With a half-set visibility map, the planner walked the primary key
    past every other store's coupons instead of the store's partial index, several times slower
    on page 1 at 1M coupons (docs/benchmarks/coupons-growth.md).
    """
    with connection.cursor() as cursor:
        for _ in range(tries):
            for table in tables:
                cursor.execute(f"VACUUM ANALYZE {table}")
            cursor.execute(
                "SELECT relname, relpages, relallvisible FROM pg_class WHERE relname = ANY(%s)",
                [list(tables)],
            )
            state = cursor.fetchall()
            if all(seen >= 0.99 * pages for _, pages, seen in state):
                break
            time.sleep(1)
    return ", ".join(f"{name} {seen:,}/{pages:,}" for name, pages, seen in state)


def explain(sql: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}")
        return "\n".join(row[0] for row in cursor.fetchall())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 100_000, 1_000_000])
    parser.add_argument("--requests", type=int, default=15, help="per case and round")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    user = UserFactory()
    stores = {size: StoreFactory(slug=f"growth-{size}") for size in args.sizes}
    started = time.perf_counter()
    for size, store in stores.items():
        MembershipFactory(user=user, store=store)
        generate(store.pk, size)
    visible = settle(("coupons_coupon", "webhooks_webhookdelivery"))
    print(
        f"generated {sum(args.sizes):,} coupons and deliveries each in "
        f"{time.perf_counter() - started:.0f}s; all-visible pages: {visible}"
    )

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_api_key(user)}")
    last = {size: -(-size // PER_PAGE) for size in args.sizes}
    cases = [
        (f"{resource} {size:>9,} {where}", store, f"/api/{path}?limit={PER_PAGE}&page={page}")
        for resource, path in (("coupons", "v1/coupons"), ("deliveries", "v2/webhook-deliveries"))
        for size, store in stores.items()
        for where, page in (("page 1", 1), ("last page", last[size]))
    ]
    samples: dict[str, list[float]] = {label: [] for label, _, _ in cases}
    for round_number in range(args.rounds):
        for label, store, url in cases if round_number % 2 == 0 else cases[::-1]:
            headers = {"HTTP_X_STORE": store.slug}
            response = client.get(url, **headers)  # warm: plan and buffers
            assert response.status_code == 200, response.content
            assert response.json()["data"], url
            for _ in range(args.requests):
                begun = time.perf_counter()
                client.get(url, **headers)
                samples[label].append((time.perf_counter() - begun) * 1000)

    print(f"\n{PER_PAGE} per page; {args.rounds} rounds x {args.requests} requests per case\n")
    print("| list | rows | page | median ms | min ms |")
    print("|---|---|---|---|---|")
    medians = {}
    for label, _, _ in cases:
        resource, size, where = label.split(maxsplit=2)
        medians[label] = statistics.median(samples[label])
        print(
            f"| {resource} | {size} | {where} | {medians[label]:.2f} | {min(samples[label]):.2f} |"
        )
    small, large = min(args.sizes), max(args.sizes)
    for resource in ("coupons", "deliveries"):
        ratio = (
            medians[f"{resource} {large:>9,} page 1"] / medians[f"{resource} {small:>9,} page 1"]
        )
        verdict = "met" if ratio <= TARGET else "NOT met"
        print(
            f"\n{resource}: page 1 at {large:,} / at {small:,} = {ratio:.2f} "
            f"(target <= {TARGET}: {verdict})"
        )

    lists = (
        ("coupons", "v1/coupons", "coupons_coupon"),
        ("deliveries", "v2/webhook-deliveries", "webhooks_webhookdelivery"),
    )
    for resource, path, table in lists:
        for where, page in (("page 1", 1), ("last page", last[large])):
            # The statements' text as the plain SQL they run, not an EXECUTE of a prepared
            # statement (core/database/connections.py), so that EXPLAIN shows their plans.
            with (
                override_settings(DATABASE_PREPARED_STATEMENTS=False),
                CaptureQueriesContext(connection) as queries,
            ):
                client.get(
                    f"/api/{path}?limit={PER_PAGE}&page={page}",
                    HTTP_X_STORE=stores[large].slug,
                )
            for sql in [q["sql"] for q in queries if table in q["sql"]]:
                print(f"\n### {resource}, {large:,} rows, {where}\n\n{sql}\n\n{explain(sql)}")
    # What the maintained totals replace: counting the store's rows, as the lists did before.
    store_id = stores[large].pk
    for resource, sql in (
        (
            "coupons",
            f"SELECT COUNT(*) FROM coupons_coupon WHERE store_id = {store_id} "
            "AND deleted_at IS NULL",
        ),
        (
            "deliveries",
            f"SELECT COUNT(*) FROM webhooks_webhookdelivery WHERE store_id = {store_id}",
        ),
    ):
        print(f"\n### {resource}, {large:,} rows, the count\n\n{sql}\n\n{explain(sql)}")


if __name__ == "__main__":
    main()
