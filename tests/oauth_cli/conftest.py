import os

import pytest

from oauth_cli.services import cli_application_ensure


@pytest.fixture(autouse=True)
def cli_application(db):
    """The one OAuth client, as `manage.py ensure_cli_client` creates it."""
    return cli_application_ensure()


class _CallbackReceiver:
    """What the CLI runs: an HTTP server on a random loopback port for the redirect."""

    def __init__(self, host: str = "127.0.0.1"):
        import queue
        import socket
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import parse_qs, urlsplit

        received = self.received = queue.Queue()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                parts = urlsplit(self.path)
                received.put((parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()}))
                body = b"<html><body>Storefront CLI: you can close this window.</body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

        self.server = Server((host, 0), Handler)
        authority = f"[{host}]" if ":" in host else host
        self.redirect_uri = f"http://{authority}:{self.server.server_port}/callback"

    def wait(self, timeout: float = 10.0) -> dict:
        """The next callback's query (a browser also asks this server for /favicon.ico)."""
        while True:
            path, query = self.received.get(timeout=timeout)
            if path == "/callback":
                return query


def _serve(host: str):
    import threading

    receiver = _CallbackReceiver(host)
    thread = threading.Thread(target=receiver.server.serve_forever, daemon=True)
    thread.start()
    yield receiver
    receiver.server.shutdown()
    receiver.server.server_close()


@pytest.fixture
def loopback_callback():
    yield from _serve("127.0.0.1")


@pytest.fixture
def loopback_callback_ipv6():
    yield from _serve("::1")


# Debian's Chromium, never a downloaded browser (the browser tests: consent, accessibility).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def chromium_browser():
    # The sync Playwright API runs an event loop in this thread; Django's ORM is still sync.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()
    os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
