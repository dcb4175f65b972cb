"""Webhook delivery benchmark: deliveries/s with 1 and 2 worker processes, and end-to-end
latency (event commit -> receiver) at a steady rate.

Run (starts throwaway PostgreSQL and Redis):
    bin/with-test-services .venv/bin/python bench/webhooks_throughput.py \
        [--events 2000] [--stores 4] [--rate 50 --seconds 10] [--pool prefork|solo|threads]

The receiver is a separate process answering 200 at once (HTTP/1.1 keep-alive); it logs the
arrival time of each `webhook-id`. Workers are real `celery -A config worker` processes.
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
# The receiver is a local server: the dev settings no longer allow it unless told to.
os.environ.setdefault("WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS", "true")
os.environ.setdefault("LOG_LEVEL", "WARNING")


# --pool threads: each process executes tasks on this many threads (database and HTTP waits
# overlap; Python work still takes turns on the GIL).
THREADS_PER_PROCESS = 4


def start_workers(processes: int, pool: str, log_dir: Path) -> list[subprocess.Popen]:
    """`processes` processes that execute tasks: one prefork worker with that concurrency, or
    that many solo workers (each executes tasks in its own main process)."""
    celery = str(Path(sys.executable).parent / "celery")
    common = ["-A", "config", "worker", "--without-gossip", "--without-mingle", "-l", "WARNING"]
    if pool == "prefork":
        commands = [[celery, *common, f"--concurrency={processes}"]]
    elif pool == "threads":
        commands = [
            [
                celery,
                *common,
                "--pool=threads",
                f"--concurrency={THREADS_PER_PROCESS}",
                "-n",
                f"threads{n}@%h",
            ]
            for n in range(processes)
        ]
    else:
        commands = [[celery, *common, "--pool=solo", "-n", f"solo{n}@%h"] for n in range(processes)]
    workers = []
    for command in commands:
        log = open(log_dir / f"worker-{time.time()}.log", "wb")  # noqa: SIM115
        workers.append(
            subprocess.Popen(
                command, cwd=BASE_DIR, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        )
    return workers


def stop_workers(workers: list[subprocess.Popen]):
    for process in workers:
        os.killpg(process.pid, 15)
    for process in workers:
        process.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=50.0, help="events/s for the latency run")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--stores", type=int, default=4, help="stores with a destination each")
    parser.add_argument("--pool", choices=["prefork", "solo", "threads"], default="prefork")
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import transaction

    from config.celery import app
    from events.services import record
    from stores.models import Store
    from webhooks.models import WebhookDelivery
    from webhooks.services import destination_put

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

    # Events go round-robin to the stores: a destination is drained by one process at a time.
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

    results = {}
    order = 0
    for concurrency in (1, 2):
        # given N queued deliveries and no worker
        ids = []
        for _ in range(args.events):
            order += 1
            ids.append(record_one(order)[0])
        # when a worker with `concurrency` processes drains them
        workers = start_workers(concurrency, args.pool, workdir)
        deadline = time.time() + 600
        wanted = set(ids)
        while time.time() < deadline and not wanted <= set(arrivals(log_path)):
            time.sleep(0.5)  # reading the receiver's log, not the database the workers use
        stop_workers(workers)
        seen = arrivals(log_path)
        times = sorted(seen[i] for i in ids if i in seen)
        elapsed = times[-1] - times[0]
        results[concurrency] = (len(times) - 1) / elapsed
        print(
            f"throughput, {concurrency} worker process(es) ({args.pool}): {len(times)} "
            f"deliveries in {elapsed:.2f}s = {results[concurrency]:.0f}/s "
            f"({results[concurrency] / concurrency:.0f}/s per process)",
            flush=True,
        )

    # latency at a steady rate, 2 worker processes already running
    workers = start_workers(2, args.pool, workdir)
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
    stop_workers(workers)
    succeeded = WebhookDelivery.objects.filter(status=WebhookDelivery.STATUS_SUCCEEDED).count()
    print(f"deliveries succeeded in the database: {succeeded} of {order}", flush=True)
    seen = arrivals(log_path)
    latencies = sorted((seen[i] - at) * 1000 for i, at in committed.items() if i in seen)
    missing = len(committed) - len(latencies)
    p50 = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(
        f"latency at {args.rate:.0f} events/s for {args.seconds:.0f}s, 2 processes ({args.pool}): "
        f"{len(latencies)} deliveries, p50 {p50:.1f} ms, p99 {p99:.1f} ms, "
        f"max {latencies[-1]:.1f} ms, not arrived {missing}",
        flush=True,
    )
    receiver.terminate()


if __name__ == "__main__":
    main()
