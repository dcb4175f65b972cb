"""The benches' webhook receiver: a process of its own on 127.0.0.1 (its work is not the
driver's GIL), HTTP/1.1 keep-alive, answering `200 ok` at once and logging the arrival time of
each request's `webhook-id`, one line per request."""

import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def receiver_main(port_queue, log_path):
    """Serves until terminated; puts its port on `port_queue` first."""
    log = open(log_path, "a", buffering=1)  # noqa: SIM115 - lives as long as the process

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # else a delayed-ACK stall per reply

        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
            log.write(f"{self.headers['webhook-id']} {time.time()}\n")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    port_queue.put(server.server_address[1])
    server.serve_forever()


def requests_received(log_path) -> list[tuple[str, float]]:
    """(webhook-id, arrival time) of every request the receiver answered, in order."""
    path = Path(log_path)
    if not path.exists():
        return []
    return [
        (event_id, float(at))
        for event_id, at in (line.split() for line in path.read_text().splitlines())
    ]


def arrivals(log_path) -> dict[str, float]:
    """The first arrival time of each webhook-id."""
    seen: dict[str, float] = {}
    for event_id, at in requests_received(log_path):
        seen.setdefault(event_id, at)
    return seen
