"""What the maintained list totals cost writers: coupon creations per
second through `coupon_create` (its transaction: the live-code check, the INSERT, the event),
with the counter triggers on and off, from N threads writing into one store (every write
takes the same counter row lock until its commit) and into one store each (no shared lock:
the trigger's own cost).

    bin/with-test-services .venv/bin/python bench/list_totals_contention.py

The cases alternate order each round; the table gives each case's median over the rounds.
"""

import argparse
import itertools
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from core.database.list_totals import TRIGGER_EVENTS  # noqa: E402
from coupons.models import COUPON_TOTALS, Coupon  # noqa: E402
from coupons.services import coupon_create  # noqa: E402
from tests.factories import StoreFactory  # noqa: E402

codes = itertools.count()


def triggers(enabled: bool) -> None:
    action = "ENABLE" if enabled else "DISABLE"
    with connection.cursor() as cursor:
        for event in TRIGGER_EVENTS:
            cursor.execute(
                f"ALTER TABLE {COUPON_TOTALS.table} {action} TRIGGER "
                f"{COUPON_TOTALS.table}_totals_{event}"
            )


def run(stores: list, writes_per_thread: int) -> float:
    """Creations per second, one thread per store in `stores` (a store may repeat)."""
    barrier = threading.Barrier(len(stores))

    def write(store) -> None:
        barrier.wait()
        try:
            for _ in range(writes_per_thread):
                coupon_create(
                    store=store,
                    code=f"C{next(codes)}",
                    type="AMOUNT",
                    discount=5,
                    store_wide=True,
                )
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(store,)) for store in stores]
    begun = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(stores) * writes_per_thread / (time.perf_counter() - begun)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--writes", type=int, default=100, help="per thread and case")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    one_store = StoreFactory(slug="contention-one")
    own_stores = [StoreFactory(slug=f"contention-{n}") for n in range(max(args.threads))]
    cases = [
        (f"{threads} threads, {where}, triggers {'on' if on else 'off'}", on, stores)
        for threads in args.threads
        for where, stores in (
            ("one store", [one_store] * threads),
            ("a store each", own_stores[:threads]),
        )
        if threads > 1 or where == "one store"
        for on in (True, False)
    ]
    rates: dict[str, list[float]] = {label: [] for label, _, _ in cases}
    for round_number in range(args.rounds):
        for label, on, stores in cases if round_number % 2 == 0 else cases[::-1]:
            triggers(on)
            rates[label].append(run(stores, args.writes))
    triggers(True)
    call_command("recount_lists", verbosity=0)  # the runs with triggers off left drift

    print(f"\n{args.writes} creations per thread; {args.rounds} rounds; median per case\n")
    print("| case | creations/s (median) | min | max | on/off |")
    print("|---|---:|---:|---:|---:|")
    for label, _, _ in cases:
        median = statistics.median(rates[label])
        off = statistics.median(rates[label.replace("triggers on", "triggers off")])
        ratio = f"{median / off:.2f}" if "triggers on" in label else ""
        print(
            f"| {label} | {median:.0f} | {min(rates[label]):.0f} | {max(rates[label]):.0f} "
            f"| {ratio} |"
        )
    print(f"\n{Coupon.objects.count()} coupons written")


if __name__ == "__main__":
    main()
