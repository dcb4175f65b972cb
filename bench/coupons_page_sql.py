"""The coupon list's page statement: plain SQL (coupons.selectors.coupon_page) against the
equivalent queryset with the paginator's COUNT subquery, in process, best of 10 x 50 calls,
alternating. The figures quoted in coupon_page's docstring. Run under bin/with-test-services:

    bin/with-test-services .venv/bin/python bench/coupons_page_sql.py
"""

import os
import sys
import timeit
from pathlib import Path

from coupons_list import bench_environment, seed

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    env = bench_environment()
    seed(env, 1_000)
    os.environ.update(env)
    import django

    django.setup()
    from config.api.pagination import CountOf
    from coupons.selectors import TRASHED_WITHOUT, coupon_list, coupon_page
    from stores.models import Store

    store = Store.objects.get(slug="bench-store")

    def by_queryset(limit: int) -> list:
        listing = coupon_list(store=store, trashed=TRASHED_WITHOUT)
        total = CountOf(listing.order_by().values("pk"))
        return list(listing.annotate(_total=total)[0:limit])

    def by_sql(limit: int) -> tuple:
        return coupon_page(store=store, trashed=TRASHED_WITHOUT, offset=0, limit=limit)

    print("| page size | statement | best ms (round 1, round 2) |")
    print("|---|---|---|")
    for limit in (15, 100):
        best = {"queryset": [], "plain SQL": []}
        for name, fetch in [("queryset", by_queryset), ("plain SQL", by_sql)] * 2:
            call = lambda fetch=fetch, limit=limit: fetch(limit)  # noqa: E731
            runs = timeit.repeat(call, number=50, repeat=10)
            best[name].append(min(runs) / 50 * 1000)
        for name, times in best.items():
            print(f"| {limit} | {name} | {', '.join(f'{t:.2f}' for t in times)} |")


if __name__ == "__main__":
    main()
