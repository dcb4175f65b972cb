"""The HTTP side of a delivery: Standard Webhooks signing and an SSRF-safe POST.

Signing follows the Standard Webhooks spec (https://www.standardwebhooks.com/, "Signature
scheme"): HMAC-SHA256 over `{webhook-id}.{webhook-timestamp}.{body}` with the base64-decoded
`whsec_` secret, sent as `webhook-signature: v1,<base64>` (space-separated when two secrets
sign during a rotation).

Time: an attempt has one budget, WEBHOOKS_TIMEOUT_SECONDS, for everything (DNS, connect, request,
response). Socket timeouts bound each operation, not their sum: a receiver trickling a byte
every few seconds would otherwise keep an attempt, and its lease, alive indefinitely.

SSRF: the session's connections resolve the host themselves, refuse any address
`addresses.address_check` refuses, and connect to the checked address; the URL keeps the host
name, so the Host header, SNI and certificate check are the name's. A pooled keep-alive
connection was checked when it was opened. Redirects are never followed and environment
proxies are ignored (a proxy would connect on our behalf, unchecked).
"""

import base64
import contextlib
import hashlib
import heapq
import hmac
import itertools
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass

import requests
from django.conf import settings
from requests.adapters import HTTPAdapter

# Private urllib3 API below (HTTPConnection._new_conn and ._dns_host, HTTPConnectionPool._get_conn):
# pyproject.toml holds urllib3 to the minor this was written against (2.8), and
# tests/webhooks/test_urllib3_override.py fails if an upgrade renames or bypasses them.
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.util import connection as urllib3_connection

from webhooks.addresses import DestinationRefused, address_check, resolve, url_origin

logger = logging.getLogger(__name__)


class RefusedConnectionError(NewConnectionError):
    """The connection was not opened because the resolved address is refused."""


class AttemptDeadline:
    """The time budget of one attempt; at its end the attempt's connections are shut down,
    which ends a blocked connect or read at once (the attempt then reports a timeout)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.ends_at = time.monotonic() + seconds
        self.expired = False
        self.finished = False
        self._connections: list = []
        self._lock = threading.Lock()

    def remaining(self) -> float:
        return max(0.0, self.ends_at - time.monotonic())

    def watch(self, connection) -> None:
        with self._lock:
            self._connections.append(connection)
            if self.expired:
                _shut(connection)

    def expire(self) -> None:
        with self._lock:
            if self.finished:
                return  # too late: the connection may already serve the next attempt
            self.expired = True
            for connection in self._connections:
                _shut(connection)

    def __enter__(self) -> "AttemptDeadline":
        _attempt.deadline = self
        _watchdog.watch(self)
        return self

    def __exit__(self, *exc_info) -> None:
        with self._lock:
            self.finished = True
        _attempt.deadline = None


class _Watchdog:
    """Expires attempt deadlines: one thread per process, started on first use, instead of a
    timer thread per attempt (starting one costs about as much as a fast attempt's claim)."""

    def __init__(self):
        self._condition = threading.Condition()
        self._deadlines: list[tuple[float, int, AttemptDeadline]] = []  # a heap by end time
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def watch(self, deadline: AttemptDeadline) -> None:
        with self._condition:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="webhooks-attempt-watchdog", daemon=True
                )
                self._thread.start()
            heapq.heappush(self._deadlines, (deadline.ends_at, next(self._order), deadline))
            if self._deadlines[0][2] is deadline:
                # Only an earlier end than the one it waits for needs waking it: waking the
                # thread on every attempt would cost the attempt a switch of the GIL.
                self._condition.notify()

    def _run(self) -> None:
        with self._condition:
            while True:
                while self._deadlines and self._deadlines[0][2].finished:
                    heapq.heappop(self._deadlines)
                if not self._deadlines:
                    self._condition.wait()
                    continue
                wait = self._deadlines[0][0] - time.monotonic()
                if wait > 0:
                    self._condition.wait(wait)
                    continue
                heapq.heappop(self._deadlines)[2].expire()


_watchdog = _Watchdog()


def _watchdog_reset() -> None:
    # A forked child (a Celery prefork worker) has no copy of the parent's thread, and the
    # parent's lock may have been held at fork time: it starts afresh.
    global _watchdog
    _watchdog = _Watchdog()


os.register_at_fork(after_in_child=_watchdog_reset)


def _shut(connection) -> None:
    sock = getattr(connection, "sock", None)
    if sock is None:
        return
    # socket.socket's own shutdown: on a TLS socket it ends the blocked read without tearing
    # down the TLS state under the reading thread.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


_attempt = threading.local()


def _current_deadline() -> AttemptDeadline | None:
    return getattr(_attempt, "deadline", None)


class _CheckedConnectionMixin:
    def _new_conn(self) -> socket.socket:
        deadline = _current_deadline()
        budget = deadline.remaining() if deadline else settings.WEBHOOKS_TIMEOUT_SECONDS
        try:
            addresses = resolve(self._dns_host, timeout=budget)
        except socket.gaierror as error:
            raise NameResolutionError(self.host, self, error) from error
        refusal = None
        for address in addresses:
            try:
                address_check(address)
            except DestinationRefused as error:
                # The host, never the URL's path (it may hold a credential).
                logger.info(
                    "webhook connection to host %s refused: %s is %s", self.host, address, error
                )
                refusal = error
                continue
            try:
                sock = urllib3_connection.create_connection(
                    (address, self.port),
                    min(self.timeout, deadline.remaining()) if deadline else self.timeout,
                    source_address=self.source_address,
                    socket_options=self.socket_options,
                )
            except TimeoutError as error:
                raise ConnectTimeoutError(
                    self, f"Connection to {self.host} timed out ({self.timeout})"
                ) from error
            except OSError as error:
                raise NewConnectionError(self, f"Failed to connect: {error}") from error
            # The peer is the address we checked (no resolution happens on an IP literal);
            # checked again so that nothing is sent to an address the check refuses.
            peer = sock.getpeername()[0]
            try:
                address_check(peer)
            except DestinationRefused as error:
                logger.info(
                    "webhook connection to host %s refused: peer %s is %s", self.host, peer, error
                )
                sock.close()
                raise RefusedConnectionError(
                    self, f"Refused destination: connected to {error}"
                ) from None
            return sock
        raise RefusedConnectionError(
            self, f"Refused destination: host {self.host} resolves to {refusal}"
        )


class CheckedHTTPConnection(_CheckedConnectionMixin, HTTPConnection):
    pass


class CheckedHTTPSConnection(_CheckedConnectionMixin, HTTPSConnection):
    pass


class _DeadlinePoolMixin:
    def _get_conn(self, timeout=None):
        # Every connection an attempt uses, new or kept alive, is under its deadline.
        connection = super()._get_conn(timeout)
        deadline = _current_deadline()
        if deadline is not None:
            deadline.watch(connection)
        return connection


class CheckedHTTPConnectionPool(_DeadlinePoolMixin, HTTPConnectionPool):
    ConnectionCls = CheckedHTTPConnection


class CheckedHTTPSConnectionPool(_DeadlinePoolMixin, HTTPSConnectionPool):
    ConnectionCls = CheckedHTTPSConnection


class CheckedAdapter(HTTPAdapter):
    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": CheckedHTTPConnectionPool,
            "https": CheckedHTTPSConnectionPool,
        }


def _session_new() -> requests.Session:
    session = requests.Session()
    session.trust_env = False
    adapter = CheckedAdapter(pool_connections=16, pool_maxsize=4, max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


_session: requests.Session | None = None


def session_get() -> requests.Session:
    """One session per process (Celery prefork children each get their own)."""
    global _session
    if _session is None:
        _session = _session_new()
    return _session


def session_reset() -> None:
    """Drops every pooled connection (after a deadline cut one mid-exchange)."""
    global _session
    if _session is not None:
        _session.close()
        _session = None


def signature_header(*, secrets: list[str], message_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{message_id}.{timestamp}.".encode() + body
    signatures = []
    for secret in secrets:
        key = base64.b64decode(secret.removeprefix("whsec_"))
        digest = hmac.new(key, signed, hashlib.sha256).digest()
        signatures.append("v1," + base64.b64encode(digest).decode())
    return " ".join(signatures)


@dataclass(frozen=True)
class SendResult:
    response_status: int | None
    response_body: str | None
    error: str
    duration_ms: int
    retry_after_seconds: float | None = None

    @property
    def succeeded(self) -> bool:
        return self.response_status is not None and 200 <= self.response_status < 300


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds (RFC 9110 §10.2.3); the HTTP-date form is honoured too."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _read_limited(response: requests.Response, limit: int) -> str:
    chunks, size = [], 0
    for chunk in response.iter_content(chunk_size=limit):
        chunks.append(chunk)
        size += len(chunk)
        if size >= limit:
            break
    raw = b"".join(chunks)[:limit]
    return raw.decode("utf-8", errors="replace")


def send(*, url: str, message_id: str, body: bytes, secrets: list[str]) -> SendResult:
    """POSTs one signed delivery within WEBHOOKS_TIMEOUT_SECONDS in all; never raises for
    network or HTTP failures."""
    with AttemptDeadline(settings.WEBHOOKS_TIMEOUT_SECONDS) as deadline:
        result = _post(url=url, message_id=message_id, body=body, secrets=secrets)
    if deadline.expired:
        session_reset()
        if not result.succeeded:
            return SendResult(None, None, _timeout_error(deadline), result.duration_ms)
    # A 2xx head received in time stands even when reading its body was cut.
    return result


def _timeout_error(deadline: AttemptDeadline) -> str:
    return f"timeout: no complete answer within {deadline.seconds:g} s"


def _failure_kind(error: requests.RequestException, reason) -> str:
    """What went wrong, in words that hold nothing of the URL (`reason`: urllib3's cause)."""
    if isinstance(error, requests.exceptions.SSLError):
        return "TLS error"
    if isinstance(error, requests.Timeout):
        return "connect timeout" if isinstance(error, requests.ConnectTimeout) else "timeout"
    if isinstance(reason, NameResolutionError):
        return "DNS failure"
    if isinstance(getattr(reason, "__cause__", None), ConnectionRefusedError):
        return "connection refused"
    return "connection error" if isinstance(error, requests.ConnectionError) else "request error"


def _post(*, url: str, message_id: str, body: bytes, secrets: list[str]) -> SendResult:
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": settings.WEBHOOKS_USER_AGENT,
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature_header(
            secrets=secrets, message_id=message_id, timestamp=timestamp, body=body
        ),
    }
    started = time.monotonic()

    def elapsed_ms() -> int:
        return int((time.monotonic() - started) * 1000)

    try:
        response = session_get().post(
            url,
            data=body,
            headers=headers,
            timeout=settings.WEBHOOKS_TIMEOUT_SECONDS,
            allow_redirects=False,
            stream=True,
        )
    except requests.RequestException as error:
        reason = getattr(error.args[0], "reason", None) if error.args else None
        if isinstance(reason, RefusedConnectionError):
            return SendResult(None, None, str(reason).split(": ", 1)[-1], elapsed_ms())
        # The kind and the origin only: the exception's text holds the URL's path and query,
        # which can be a credential (docs/design.md "Webhooks").
        error_text = f"{_failure_kind(error, reason)}: {url_origin(url)}"
        return SendResult(None, None, error_text, elapsed_ms())
    deadline = _current_deadline()
    if deadline is not None and deadline.expired:
        # Cut before the head was complete: http.client still hands over the status line it
        # read, but a response whose headers never finished is no 2xx answer.
        response.close()
        return SendResult(None, None, _timeout_error(deadline), elapsed_ms())
    try:
        response_body = _read_limited(response, settings.WEBHOOKS_RESPONSE_BODY_LIMIT)
        error = ""
    except requests.RequestException:
        response_body, error = None, f"reading the response failed: {url_origin(url)}"
    finally:
        response.close()
    retry_after = None
    if response.status_code in (429, 503):
        retry_after = _retry_after(response.headers.get("Retry-After"))
    if not error and not 200 <= response.status_code < 300:
        error = f"HTTP {response.status_code}"
    return SendResult(response.status_code, response_body, error, elapsed_ms(), retry_after)
