"""Webhook fan-out benchmark: how long one 100-coupon batch write (100 `coupon.created` events,
one transaction) takes when its store has webhook channels, against the same write in a store
with none (the reference, measured in the same run).

Run (starts throwaway PostgreSQL and Redis):
    bin/with-test-services .venv/bin/python bench/webhooks_fanout.py \
        [--rounds 5] [--channels 20] [--compare DIR ...]

Each store shape is: no channel (the reference), `--channels` enabled channels subscribed to
`coupon.created`, as many disabled ones, and three times as many enabled ones (a store before
the cap). Channels are written straight to the table, so any checkout can be measured. With
`--compare DIR` (another checkout, e.g. the code before a change: `git archive <commit> | tar
-x -C DIR`), each shape is measured by that checkout's code too, in turn with this one's,
against the same database (migrated by this checkout) and broker. Each measure is one write in
a new store, in a process of its own (this file, run with the checkout's code first on the
path); the median of the rounds is printed at the end. The drains the write queues on commit go
to the broker with no worker, and are purged.
"""

import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")
os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("LOG_LEVEL", "WARNING")
BATCH = 100


def measure(shape: str, channels: int, rounds: int) -> dict:
    """In this process (run with the checkout's code first on the path): the shape's write,
    `rounds` times, each in a new store."""
    import django

    django.setup()
    from decimal import Decimal

    from coupons.services import coupon_batch_create
    from stores.models import Store
    from webhooks.models import WebhookChannel, WebhookDelivery

    count, enabled = {
        "none": (0, True),
        "enabled": (channels, True),
        "disabled": (channels, False),
        "enabled_x3": (channels * 3, True),
    }[shape]
    seconds, rows = [], []
    for _ in range(rounds):
        store = Store.objects.create(name="Bench", slug=f"fanout-{time.time_ns()}")
        WebhookChannel.objects.bulk_create(
            WebhookChannel(
                store=store,
                url=f"https://hooks.example.com/{n}",
                enabled=enabled,
                event_types=["coupon.created"],
            )
            for n in range(count)
        )
        resources = [
            {"code": f"C{n}", "type": "AMOUNT", "discount": Decimal(5), "store_wide": True}
            for n in range(BATCH)
        ]
        started = time.perf_counter()
        coupon_batch_create(store=store, resources=resources)
        seconds.append(time.perf_counter() - started)
        rows.append(WebhookDelivery.objects.filter(store=store).count())
    return {"seconds": statistics.median(seconds), "rows": statistics.median(rows)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--channels", type=int, default=20, help="the channel cap")
    parser.add_argument("--compare", type=Path, action="append", default=[])
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.channels, args.rounds)))
        return

    import django

    django.setup()
    from django.core.management import call_command

    from config.celery import app

    call_command("migrate", verbosity=0)
    checkouts = {"this": BASE_DIR, **{str(path): path.resolve() for path in args.compare}}
    shapes = ("none", "enabled", "disabled", "enabled_x3")
    results = {(shape, label): [] for shape in shapes for label in checkouts}
    rows = {}
    # Round after round, each shape and checkout in turn: a shared host's drift falls on all.
    for _round in range(args.rounds):
        for shape in shapes:
            for label, checkout in checkouts.items():
                venv = checkout / ".venv" if (checkout / ".venv").exists() else BASE_DIR / ".venv"
                command = [
                    str(venv / "bin" / "python"),
                    # This file, with the checkout's code first on the path.
                    str(Path(__file__).resolve()),
                    *("--measure", shape, "--channels", str(args.channels), "--rounds", "1"),
                ]
                out = subprocess.run(
                    command,
                    cwd=checkout,
                    env={**os.environ, "PYTHONPATH": str(checkout)},
                    capture_output=True,
                    text=True,
                    check=True,
                )
                result = json.loads(out.stdout.strip().splitlines()[-1])
                results[shape, label].append(result["seconds"])
                rows[shape, label] = result["rows"]
                app.control.purge()
                print(f"{shape:>10}, {label}: {result['seconds']:.3f} s", flush=True)
    for shape in shapes:
        for label in checkouts:
            median = statistics.median(results[shape, label])
            reference = statistics.median(results["none", label])
            print(
                f"median, {shape:>10}, {label}: {median:.3f} s for {BATCH} events, "
                f"{rows[shape, label]:.0f} delivery rows ({median / reference:.2f} x the store "
                "without channels)",
                flush=True,
            )


if __name__ == "__main__":
    main()
