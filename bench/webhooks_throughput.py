"""Webhook delivery benchmark: deliveries/s with 1 and 2 worker processes, end-to-end
latency (event commit -> receiver) at a steady rate, and how long a batch of events committed
in one transaction takes to arrive.

Run (starts throwaway PostgreSQL and Redis):
    bin/with-test-services .venv/bin/python bench/webhooks_throughput.py \
        [--events 2000] [--stores 4] [--rate 50 --seconds 10] [--batches 3 --batch-size 100] \
        [--rounds 1] [--processes 1 2] [--compare DIR ...]

The receiver is a separate process answering 200 at once (HTTP/1.1 keep-alive); it logs the
arrival time of each `webhook-id`. Workers are real `celery -A config worker` processes (the
prefork pool: a webhooks worker refuses any other). With `--compare DIR` (another checkout,
e.g. the code before a change; its `.venv`, or this one's when it has none), each round
measures that checkout's workers too, in turn with this one's, against the same database,
broker and receiver; the medians and their ratio to this checkout are printed at the end.
The events are always recorded (and their drains queued on commit) by this checkout's code.

After the throughput rounds, each checkout in turn gets a worker with 2 processes for the
latency run (`--seconds` of `--rate` events/s, one transaction each) and then `--batches`
batches of `--batch-size` events recorded in one transaction to one store (commit -> the
batch's last arrival), one batch at a time.
"""

import argparse
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
from webhook_receiver import arrivals, receiver_main  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")
os.environ.setdefault("DEBUG", "0")
# The receiver is a local server: the dev settings allow it only when told to.
os.environ.setdefault("WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS", "true")
os.environ.setdefault("LOG_LEVEL", "WARNING")


def start_workers(processes: int, log_dir: Path, checkout: Path) -> subprocess.Popen:
    """One prefork worker with `processes` pool processes, running `checkout`'s code."""
    venv = checkout / ".venv" if (checkout / ".venv").exists() else BASE_DIR / ".venv"
    command = [
        str(venv / "bin" / "celery"),
        *("-A", "config", "worker", "--without-gossip", "--without-mingle", "-l", "WARNING"),
        f"--concurrency={processes}",
    ]
    log = open(log_dir / f"worker-{time.time()}.log", "wb")  # noqa: SIM115
    return subprocess.Popen(
        command,
        cwd=checkout,
        # Its code first, before an editable install of another checkout.
        env={**os.environ, "PYTHONPATH": str(checkout)},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop_workers(worker: subprocess.Popen):
    os.killpg(worker.pid, 15)
    worker.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=50.0, help="events/s for the latency run")
    parser.add_argument("--seconds", type=float, default=10.0, help="0: no latency run")
    parser.add_argument("--batches", type=int, default=3, help="per checkout; 0: none")
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--stores", type=int, default=4, help="stores with a channel each")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--compare", type=Path, action="append", default=[])
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import transaction

    from config.celery import app
    from events.services import record
    from stores.models import Store
    from webhooks.channels.destination import destination_put
    from webhooks.models import WebhookDelivery

    call_command("migrate", verbosity=0)
    app.control.purge()
    workdir = Path(tempfile.mkdtemp(prefix="webhooks-bench-"))
    log_path = workdir / "arrivals.log"
    port_queue = multiprocessing.Queue()
    receiver = multiprocessing.Process(
        target=receiver_main, args=(port_queue, log_path), daemon=True
    )
    receiver.start()
    port = port_queue.get(timeout=10)

    # Events go round-robin to the stores: a channel is drained by one process at a time.
    stores = []
    for number in range(args.stores):
        store = Store.objects.create(name="Bench", slug=f"bench-{int(time.time())}-{number}")
        destination_put(
            store=store, url=f"http://127.0.0.1:{port}/hooks", event_types=["order.completed"]
        )
        stores.append(store)

    def record_one(n):
        with transaction.atomic():
            event = record(
                store=stores[n % len(stores)],
                type="order.completed",
                subject=("order", n),
                data={"total_cents": 100 + n, "currency": "EUR"},
            )
        return event.id, time.time()

    checkouts = {"this": BASE_DIR, **{str(path): path.resolve() for path in args.compare}}
    results = {(label, n): [] for label in checkouts for n in args.processes}
    order = 0
    for _round in range(args.rounds):
        for label, checkout in checkouts.items():
            for concurrency in args.processes:
                # given N queued deliveries and no worker
                ids = []
                for _ in range(args.events):
                    order += 1
                    ids.append(record_one(order)[0])
                # when a worker with `concurrency` processes drains them
                worker = start_workers(concurrency, workdir, checkout)
                deadline = time.time() + 600
                wanted = set(ids)
                while time.time() < deadline and not wanted <= set(arrivals(log_path)):
                    time.sleep(0.5)  # reading the receiver's log, not the workers' database
                stop_workers(worker)
                seen = arrivals(log_path)
                times = sorted(seen[i] for i in ids if i in seen)
                elapsed = times[-1] - times[0]
                rate = (len(times) - 1) / elapsed
                results[label, concurrency].append(rate)
                print(
                    f"throughput, {label}, {concurrency} worker process(es): {len(times)} "
                    f"deliveries in {elapsed:.2f}s = {rate:.0f}/s",
                    flush=True,
                )
    for concurrency in args.processes:
        reference = statistics.median(results["this", concurrency])
        for label in checkouts:
            median = statistics.median(results[label, concurrency])
            print(
                f"median, {label}, {concurrency} process(es): {median:.0f}/s "
                f"({median / reference:.2f} x this checkout)",
                flush=True,
            )
    if not (args.seconds or args.batches):
        receiver.terminate()
        return

    def record_batch(first):
        """`args.batch_size` events of one store in one transaction; returns their ids and
        the time of the commit (taken by the first on-commit callback, before the events'
        own queue their drain)."""
        committed_at = []
        with transaction.atomic():
            transaction.on_commit(lambda: committed_at.append(time.time()))
            ids = [
                record(
                    store=stores[0],
                    type="order.completed",
                    subject=("order", first + n),
                    data={"total_cents": 100 + n, "currency": "EUR"},
                ).id
                for n in range(args.batch_size)
            ]
        return ids, committed_at[0]

    latency = {label: [] for label in checkouts}
    batch_seconds = {label: [] for label in checkouts}
    for _round in range(args.rounds):
        for label, checkout in checkouts.items():
            # latency at a steady rate, 2 worker processes already running
            workers = start_workers(2, workdir, checkout)
            time.sleep(5)  # boot
            committed = {}
            interval = 1.0 / args.rate
            started = time.time()
            n = 0
            while time.time() - started < args.seconds:
                order += 1
                event_id, at = record_one(order)
                committed[event_id] = at
                n += 1
                sleep_for = started + n * interval - time.time()
                if sleep_for > 0:
                    time.sleep(sleep_for)
            time.sleep(3)
            seen = arrivals(log_path)
            latencies = sorted((seen[i] - at) * 1000 for i, at in committed.items() if i in seen)
            if latencies:
                latency[label].extend(latencies)
                p50 = statistics.median(latencies)
                p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
                print(
                    f"latency, {label}, at {args.rate:.0f} events/s for {args.seconds:.0f}s, "
                    f"2 processes: {len(latencies)} deliveries, p50 {p50:.1f} ms, "
                    f"p99 {p99:.1f} ms, max {latencies[-1]:.1f} ms, "
                    f"not arrived {len(committed) - len(latencies)}",
                    flush=True,
                )
            # batches of events in one transaction, one at a time
            for _batch in range(args.batches):
                ids, committed_at = record_batch(order + 1)
                order += args.batch_size
                deadline = time.time() + 60
                while time.time() < deadline and not set(ids) <= set(arrivals(log_path)):
                    time.sleep(0.1)
                seen = arrivals(log_path)
                arrived = [seen[i] for i in ids if i in seen]
                took = max(arrived) - committed_at
                batch_seconds[label].append(took)
                print(
                    f"batch, {label}: {len(arrived)} of {len(ids)} events of one transaction "
                    f"arrived {took:.3f} s after the commit",
                    flush=True,
                )
                time.sleep(1)
            stop_workers(workers)
    succeeded = WebhookDelivery.objects.filter(status=WebhookDelivery.STATUS_SUCCEEDED).count()
    print(f"deliveries succeeded in the database: {succeeded} of {order}", flush=True)
    for label in checkouts:
        if latency["this"] and latency[label]:
            p50, reference = statistics.median(latency[label]), statistics.median(latency["this"])
            print(
                f"latency p50, {label}: {p50:.1f} ms ({p50 / reference:.2f} x this checkout)",
                flush=True,
            )
        if batch_seconds["this"] and batch_seconds[label]:
            took = statistics.median(batch_seconds[label])
            reference = statistics.median(batch_seconds["this"])
            print(
                f"batch of {args.batch_size} median, {label}: {took:.3f} s "
                f"({took / reference:.2f} x this checkout)",
                flush=True,
            )
    receiver.terminate()


if __name__ == "__main__":
    main()
