"""In-process cost of one webhook send (`webhooks.dispatch.sender.send`: sign, resolve and check the
host, POST on a kept-alive connection, read the answer), against this checkout and others in
turn, in one run.

Run (needs no database; `bin/with-test-services` only provides the settings' services):
    bin/with-test-services .venv/bin/python bench/webhooks_send.py \
        [--sends 2000] [--rounds 5] [--compare DIR ...]

Each measurement is a fresh process with the checkout's code first on its path, sending
`--sends` deliveries one after another to the benches' receiver process
(bench/webhook_receiver.py) at `http://127.0.0.1:<port>/` (an IP literal: no lookup) and at
`http://localhost:<port>/` (a name, resolved as the system resolves it: /etc/hosts here).
Prints microseconds per send, wall clock and this process's CPU (every thread of it: the
lookup and watchdog threads too; the receiver's work is not in it, so on a loaded host the CPU
figure is the steadier one), then the medians and their ratio to this checkout.
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
HOSTS = ("127.0.0.1", "localhost")
KINDS = ("wall", "CPU")


def child(url: str, sends: int) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")
    os.environ.setdefault("DEBUG", "0")
    os.environ["WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS"] = "true"  # the receiver is local
    import django

    django.setup()
    from webhooks.dispatch.sender import send

    secrets = ["whsec_" + "a2V5" * 11]  # base64 of 33 bytes, as a channel's secret
    body = b'{"id":"evt_1","type":"order.completed","data":{"total_cents":1250}}'

    def one(n: int) -> None:
        result = send(url=url, message_id=f"msg_{n}", body=body, secrets=secrets)
        assert result.succeeded, result.error

    for n in range(50):  # connection, imports and caches warm
        one(n)
    started, cpu_started = time.perf_counter(), time.process_time()
    for n in range(sends):
        one(n)
    cpu = time.process_time() - cpu_started
    print((time.perf_counter() - started) / sends * 1e6, cpu / sends * 1e6)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sends", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--compare", type=Path, action="append", default=[])
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return

    sys.path.insert(0, str(BASE_DIR / "bench"))
    from webhook_receiver import receiver_main

    port_queue = multiprocessing.Queue()
    log_path = Path(tempfile.mkdtemp(prefix="webhooks-send-")) / "arrivals.log"
    receiver = multiprocessing.Process(
        target=receiver_main, args=(port_queue, log_path), daemon=True
    )
    receiver.start()
    port = port_queue.get(timeout=10)
    checkouts = {"this": BASE_DIR, **{str(path): path.resolve() for path in args.compare}}
    results = {(label, host, kind): [] for label in checkouts for host in HOSTS for kind in KINDS}
    try:
        for _round in range(args.rounds):
            for label, checkout in checkouts.items():
                for host in HOSTS:
                    url = f"http://{host}:{port}/hooks"
                    output = subprocess.run(
                        [sys.executable, __file__, "--child", url, str(args.sends)],
                        cwd=checkout,
                        env={**os.environ, "PYTHONPATH": str(checkout)},
                        capture_output=True,
                        text=True,
                        check=True,
                    ).stdout
                    wall, cpu = (float(figure) for figure in output.split()[-2:])
                    results[label, host, "wall"].append(wall)
                    results[label, host, "CPU"].append(cpu)
                    print(f"{label}, {host}: {wall:.0f} us wall, {cpu:.0f} us CPU", flush=True)
    finally:
        receiver.terminate()
    for host in HOSTS:
        for kind in KINDS:
            reference = statistics.median(results["this", host, kind])
            for label in checkouts:
                median = statistics.median(results[label, host, kind])
                print(
                    f"median, {label}, {host}: {median:.0f} us {kind} per send "
                    f"({median / reference:.2f} x this checkout)",
                    flush=True,
                )


if __name__ == "__main__":
    main()
