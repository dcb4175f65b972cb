"""Helpers of the webhooks tests (and of the other tests that send webhooks or run a worker): a
real HTTP receiver thread, channels and events, a condition wait, and a real Celery worker.

The receiver listens on 127.0.0.1, records every request (headers and body bytes) and answers
what the test's `respond(request)` returns. The worker is `celery -A config worker` (with an
embedded beat for the sweeper) run as a subprocess against the test database and test Redis,
with a compressed retry schedule and short leases. Fixtures over them live in conftest.py.
"""

import base64
import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import redis
from django.conf import settings as django_settings
from django.db import connection, transaction
from django.utils import timezone

from events.services import record
from tests.servers import wait_for
from webhooks.channels.destination import destination_put
from webhooks.models import WebhookSendSlot, WebhookSigningSecret

BASE_DIR = Path(__file__).resolve().parent.parent.parent


@dataclass
class ReceivedRequest:
    method: str
    path: str
    headers: dict
    body: bytes
    received_at: float
    answered_status: int | None = None
    client_address: tuple = ()  # one per connection: keep-alive reuse shows as one


@dataclass
class Reply:
    status: int = 200
    body: bytes = b'{"ok": true}'
    headers: dict = field(default_factory=dict)
    delay: float = 0.0


class Receiver:
    """A webhook receiver: `respond` decides each reply (default 200). With `ssl_context` it
    speaks TLS (tests/webhooks/tls.py), the handshake done on the request's own thread."""

    def __init__(self, ssl_context=None):
        self.requests: list[ReceivedRequest] = []
        self.lock = threading.Lock()
        self.respond = lambda request: Reply()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else a delayed-ACK stall per reply

            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                request = ReceivedRequest(
                    "POST", self.path, dict(self.headers), self.rfile.read(length), time.time()
                )
                request.client_address = self.client_address
                with receiver.lock:
                    receiver.requests.append(request)
                reply = receiver.respond(request)
                if reply.delay:
                    time.sleep(reply.delay)
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                    request.answered_status = reply.status
                except OSError:
                    pass  # the sender gave up (timeout): nothing was answered

            do_GET = do_POST

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.scheme = "http"
        if ssl_context is not None:
            self.scheme = "https"
            self.server.socket = ssl_context.wrap_socket(
                self.server.socket, server_side=True, do_handshake_on_connect=False
            )
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/hooks"

    def received(self) -> list[ReceivedRequest]:
        with self.lock:
            return list(self.requests)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def channel_for(store, url, event_types=None, enabled=True):
    channel, _ = destination_put(
        store=store,
        url=url,
        event_types=event_types or ["order.completed", "coupon.created"],
        enabled=enabled,
    )
    return channel


def record_order_completed(store, order_id=1, total_cents=1250):
    with transaction.atomic():
        return record(
            store=store,
            type="order.completed",
            subject=("order", order_id),
            data={"total_cents": total_cents, "currency": "EUR"},
        )


# Compressed timings of the worker subprocess (config/settings/webhooks.py reads them).
WORKER_ENV = {
    "WEBHOOKS_RETRY_SCHEDULE_SECONDS": "0.2,0.2,0.2",
    "WEBHOOKS_TIMEOUT_SECONDS": "1.5",
    # webhooks.E001/E002: drain + timeout < time limit; time limit + margin < lease
    "WEBHOOKS_TIME_LIMIT_SECONDS": "3",
    "WEBHOOKS_LEASE_MARGIN_SECONDS": "2",
    "WEBHOOKS_LEASE_SECONDS": "5.5",
    "WEBHOOKS_DRAIN_SECONDS": "1",
    "WEBHOOKS_SWEEP_INTERVAL_SECONDS": "0.5",
    "WEBHOOKS_REQUEUE_AFTER_SECONDS": "1",
}


class CeleryWorker:
    """`celery -A config worker -B` in its own process group, on the test database."""

    def __init__(
        self,
        log_dir: Path,
        concurrency: int = 2,
        queues=None,
        beat: bool = True,
        pool=None,
        extra_env: dict | None = None,
    ):
        """`queues`: consumed only these (`-Q`; all when None); `beat`: with an embedded
        beat (`-B`); `pool`: Celery's default (prefork) when None; `extra_env`: over WORKER_ENV's
        compressed timings."""
        self.log_dir = log_dir
        self.extra_env = extra_env or {}
        self.concurrency = concurrency
        self.queues = queues
        self.beat = beat
        self.pool = pool
        self.process: subprocess.Popen | None = None
        self.starts = 0

    def env(self) -> dict:
        settings_dict = connection.settings_dict
        database_url = (
            f"postgres://{settings_dict['USER']}@{settings_dict['HOST']}:{settings_dict['PORT']}"
            f"/{settings_dict['NAME']}"
        )
        return {
            **os.environ,
            **WORKER_ENV,
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": database_url,
            "PYTHONUNBUFFERED": "1",
            **self.extra_env,
        }

    def command(self) -> list[str]:
        command = [str(Path(sys.executable).parent / "celery"), "-A", "config", "worker"]
        if self.beat:
            command += ["-B", "--schedule", str(self.log_dir / f"beat-{self.starts}")]
        if self.queues:
            command += ["-Q", ",".join(self.queues)]
        if self.pool:
            command += [f"--pool={self.pool}"]
        command += [
            # Its own node name: two workers of one test may run side by side on this host.
            "-n",
            f"{self.log_dir.name}-{self.starts}@%h",
            "--loglevel=INFO",
            f"--concurrency={self.concurrency}",
            "--without-gossip",
            "--without-mingle",
        ]
        return command

    def start(self):
        self.starts += 1
        log_path = self.log_dir / f"worker-{self.starts}.log"
        self.log_path = log_path
        with open(log_path, "wb") as log:
            self.process = subprocess.Popen(
                self.command(),
                cwd=BASE_DIR,
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        wait_for(
            lambda: b"ready." in log_path.read_bytes(),
            timeout=60,
            what="celery worker ready",
            process=self.process,
            log=lambda: log_path.read_text()[-3000:],
        )

    def kill(self):
        """kill -9 of the whole worker (main process, pool children, embedded beat)."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def supervise(self):
        """Restarts the worker whenever it exits, as systemd's Restart=always and compose's
        restart policy would (docs/production.md): the fault tests kill it with -9."""
        self.supervising = True

        def loop():
            while self.supervising:
                if self.process.poll() is not None and self.supervising:
                    # exited again at once (Redis still down): the next round retries
                    with contextlib.suppress(AssertionError):
                        self.start()
                time.sleep(0.2)

        self.supervisor = threading.Thread(target=loop, daemon=True)
        self.supervisor.start()

    def stop(self):
        self.supervising = False
        if getattr(self, "supervisor", None) is not None:
            self.supervisor.join(timeout=70)
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


def queued() -> list[tuple[str, list]]:
    """(task name, args) of every message waiting in the broker's webhooks queue."""
    client = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    queue = django_settings.WEBHOOKS_QUEUE
    messages = [json.loads(raw) for raw in reversed(client.lrange(queue, 0, -1))]
    # kombu's Redis message: a base64 body holding [args, kwargs, embed]
    return [
        (message["headers"]["task"], json.loads(base64.b64decode(message["body"]))[0])
        for message in messages
    ]


class HeldReceiver:
    """Makes `receiver` hold every request until released, counting those in flight."""

    def __init__(self, receiver):
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        receiver.respond = self.respond

    def respond(self, request):
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self.release.wait(timeout=30)
        with self.lock:
            self.in_flight -= 1
        return Reply(200)


# A worker's settings where a send times out quickly and a channel has two slots (the
# fairness and send-slot runs).
SEND_TIMEOUT = 3.0
FAIRNESS_ENV = {
    "WEBHOOKS_TIMEOUT_SECONDS": str(SEND_TIMEOUT),
    # webhooks.E001/E002: drain + timeout < time limit; time limit + margin < lease
    "WEBHOOKS_TIME_LIMIT_SECONDS": "5",
    "WEBHOOKS_LEASE_SECONDS": "8",
    "WEBHOOKS_CHANNEL_CONCURRENCY": "2",
    "WEBHOOKS_RETRY_SCHEDULE_SECONDS": "0.5,0.5,0.5",
}


class HangingReceiver(Receiver):
    """Answers nothing until after the sender's timeout."""

    def __init__(self):
        super().__init__()
        self.respond = lambda request: Reply(200, delay=SEND_TIMEOUT + 1)

    def most_sends_at_once(self) -> int:
        """Each send lasts the whole timeout (the receiver answers later), so the sends started
        within less than one timeout of each other overlapped: their largest count is the
        most sends in flight at once. (The receiver's own threads outlive the sender's
        hang-up, so counting them would overstate it.)"""
        starts = sorted(request.received_at for request in self.received())
        window = SEND_TIMEOUT * 0.8
        return max(
            (sum(1 for other in starts if start <= other < start + window) for start in starts),
            default=0,
        )


class CountingReceiver(Receiver):
    """Answers 200 after holding each request a while, counting those in flight."""

    def __init__(self, hold: float):
        super().__init__()
        self.counter = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0

        def respond(request):
            with self.counter:
                self.in_flight += 1
                self.most_in_flight = max(self.most_in_flight, self.in_flight)
            time.sleep(hold)
            with self.counter:
                self.in_flight -= 1
            return Reply(200)

        self.respond = respond


def live_slots() -> int:
    return WebhookSendSlot.objects.filter(lease_until__gte=timezone.now()).count()


def store_secret(store, *, previous: bool = False) -> str:
    """The store's signing secret (or the previous one) as stored."""
    found = WebhookSigningSecret.objects.get(store=store)
    return found.previous_secret if previous else found.secret


# --- a hostile receiver -------------------------------------------------------------------------


@dataclass(frozen=True)
class RawAnswer:
    """What a hostile receiver writes back, byte for byte, and how it ends the connection:
    "close" (FIN), "reset" (RST: SO_LINGER 0), "trickle" (one byte per TRICKLE_SECONDS, so
    past any budget, until the sender hangs up) or "flood" (then FLOOD_BYTES of body, as fast
    as the sender reads them)."""

    name: str
    raw: bytes
    end: str = "close"


TRICKLE_SECONDS = 0.05
FLOOD_BYTES = 64 * 1024 * 1024


class HostileReceiver:
    """A raw socket server answering each connection's request with the next of `answers`
    (the last one again once they run out), whatever bytes they are. `sends` counts the
    requests it read in full; `answered` names the answer each of them got."""

    def __init__(self, answers: list[RawAnswer]):
        self.answers = answers
        self.answered: list[str] = []
        self.flooded = 0  # body bytes the sender took of the floods
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.05)
        self.closed = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/hooks"

    @property
    def sends(self) -> int:
        with self.lock:
            return len(self.answered)

    def _serve(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._answer, args=(client,), daemon=True).start()

    def _answer(self, client: socket.socket) -> None:
        with client:
            client.settimeout(5)
            if not self._request_read(client):
                return
            with self.lock:
                answer = self.answers[min(len(self.answered), len(self.answers) - 1)]
                self.answered.append(answer.name)
            try:
                if answer.end == "trickle":
                    for byte in answer.raw:
                        client.sendall(bytes([byte]))
                        time.sleep(TRICKLE_SECONDS)
                    return
                client.sendall(answer.raw)
                if answer.end == "flood":
                    chunk = b"x" * 65536
                    for _ in range(FLOOD_BYTES // len(chunk)):
                        client.sendall(chunk)
                        with self.lock:
                            self.flooded += len(chunk)
                if answer.end == "reset":
                    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass  # the sender hung up

    @staticmethod
    def _request_read(client: socket.socket) -> bool:
        """Reads one request (head and Content-Length body); False if the sender hung up."""
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = client.recv(65536)
                if not chunk:
                    return False
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            while len(body) < length:
                chunk = client.recv(65536)
                if not chunk:
                    return False
                body += chunk
        except OSError:
            return False
        return True

    def close(self) -> None:
        self.closed.set()
        self.listener.close()
        self.thread.join(timeout=5)


class SilentReceiver:
    """A receiver that accepts every TCP connection and never answers, holding each open until
    closed: a sender waits its whole budget on it."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.connections: list[socket.socket] = []
        self.closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/hooks"

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                accepted, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(accepted)

    def close(self) -> None:
        self.closed.set()
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self.listener.close()
        for accepted in self.connections:
            accepted.close()
