"""How an attempt reaches its receiver: the host's name looked up within bounds, and the
SSRF-safe HTTP connection to the address that passed the check.

Name resolution for webhooks, bounded in time and in threads (docs/decisions/hardening.md
"Hardening II: DNS lookups and address errors").

getaddrinfo has no timeout and cannot be cancelled: each lookup runs on a thread, and a caller
waits for it at most its own timeout, then abandons it (the thread runs on until the C
library gives up, which behind a name server that never answers takes 10 s to minutes). So
that lookups stalled by one name server take no one else's capacity:
- an IP literal is never looked up;
- a host has one lookup in flight at a time, which every caller asking for it meanwhile waits
  on (single flight): a stalled host holds one thread however often it is asked for;
- a store starts lookups of at most DNS_LOOKUPS_PER_STORE hosts at a time (its own stalling
  names, asked one after another); beyond that its lookup fails at once;
- every other lookup gets a thread at once, up to DNS_LOOKUP_THREADS_MAX per process, a
  backstop far above what the stores of one process hold.

The SSRF-safe HTTP session of webhook attempts (docs/decisions/webhooks.md "SSRF").

Each request resolves its host once, within the attempt's budget (or reuses the answer that
passed the check at most WEBHOOKS_CHECKED_ANSWER_SECONDS ago), refuses every address
`addresses.address_check` refuses, and is sent through urllib3's pool for the first allowed
address: the connection goes to that IP literal, so no second lookup can answer differently
(DNS rebinding). TLS still names the original host: `server_hostname` (SNI) and
`assert_hostname` (the certificate check) are the host's, and so is the `Host` header. The
same technique as Saleor's requests-hardened (`IPFilterAdapter`), with our own address check
and bounded lookups; docs/decisions/webhooks.md says why not that library itself.

Only public extension points of requests and urllib3 are used: the adapter's
`build_connection_pool_key_attributes` and `add_headers` hooks, the pool manager's
`pool_classes_by_scheme`, a pool's `ConnectionCls`, a connection's `connect` and `request`,
and the session's `get_redirect_target`. Redirects are never followed (the caller passes
`allow_redirects=False`, and the session sees no redirect target) and environment proxies
are ignored (a proxy would connect on our behalf, unchecked).
"""

import ipaddress
import logging
import os
import queue
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import requests
from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from webhooks.dispatch.addresses import UrlRefused, address_check
from webhooks.dispatch.deadline import current_deadline

logger = logging.getLogger(__name__)

DNS_LOOKUPS_PER_STORE = 4
DNS_LOOKUP_THREADS_MAX = 128
_IDLE_THREAD_SECONDS = 60  # an idle lookup thread ends after this


class ResolutionTimeout(socket.gaierror):
    """The resolver did not answer within the caller's timeout."""


class ResolverBusy(socket.gaierror):
    """The lookup was not started: the store's or the process's lookups in flight are at
    their bound."""


@dataclass(eq=False)
class _Lookup:
    host: str
    store_id: int | None
    done: threading.Event = field(default_factory=threading.Event)
    addresses: tuple[str, ...] = ()
    error: tuple[int, str] | None = None  # (EAI_* code, message) when the lookup failed


class _Resolver:
    """The lookups in flight in this process and the daemon threads that run them (a stalled
    lookup never holds up the process's exit)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._in_flight: dict[str, _Lookup] = {}
        self._store_lookups: Counter[int] = Counter()
        self._queue: queue.SimpleQueue[_Lookup] = queue.SimpleQueue()
        # Threads waiting for a lookup less the lookups queued: a lookup queued while this is
        # not above 0 gets a new thread.
        self._idle = 0

    def lookup(self, host: str, *, store_id: int | None) -> _Lookup:
        """The lookup of `host` in flight, started now if none is."""
        with self._lock:
            lookup = self._in_flight.get(host)
            if lookup is not None:
                return lookup
            process_full = len(self._in_flight) >= DNS_LOOKUP_THREADS_MAX
            store_full = store_id is not None and (
                self._store_lookups[store_id] >= DNS_LOOKUPS_PER_STORE
            )
            if not (process_full or store_full):
                lookup = _Lookup(host, store_id)
                self._in_flight[host] = lookup
                if store_id is not None:
                    self._store_lookups[store_id] += 1
                self._queue.put(lookup)
                thread_needed = self._idle <= 0
                if not thread_needed:
                    self._idle -= 1  # an idle thread is promised this lookup
        if process_full:
            logger.warning("webhooks DNS: %d lookups in flight, none more", DNS_LOOKUP_THREADS_MAX)
            raise ResolverBusy(socket.EAI_AGAIN, "too many lookups in flight in this process")
        if store_full:
            raise ResolverBusy(
                socket.EAI_AGAIN, f"{DNS_LOOKUPS_PER_STORE} lookups of this store in flight"
            )
        if thread_needed:
            try:
                threading.Thread(target=self._serve, name="webhooks-dns", daemon=True).start()
            except RuntimeError as error:  # no thread to be had: fail this lookup, not the host
                with self._lock:
                    self._idle -= 1  # the next thread to take the queued lookup skips it
                self._finish(lookup, error=(socket.EAI_AGAIN, f"no lookup thread: {error}"))
        return lookup

    def _serve(self) -> None:
        while True:
            try:
                lookup = self._queue.get(timeout=_IDLE_THREAD_SECONDS)
            except queue.Empty:
                with self._lock:
                    try:  # queued for this thread just as it timed out
                        lookup = self._queue.get_nowait()
                    except queue.Empty:
                        self._idle -= 1
                        return
            if lookup.done.is_set():
                with self._lock:
                    self._idle += 1
                continue
            try:
                infos = socket.getaddrinfo(lookup.host, None, type=socket.SOCK_STREAM)
            except socket.gaierror as error:
                self._finish(lookup, error=(error.errno, str(error)), thread_idle=True)
            except Exception as error:  # UnicodeError of an unencodable name, OSError, ...
                error_text = f"{type(error).__name__}: {error}"
                self._finish(lookup, error=(socket.EAI_FAIL, error_text), thread_idle=True)
            else:
                addresses = tuple(dict.fromkeys(info[4][0] for info in infos))
                self._finish(lookup, addresses=addresses, thread_idle=True)

    def _finish(self, lookup: _Lookup, *, addresses=(), error=None, thread_idle=False) -> None:
        lookup.addresses, lookup.error = addresses, error
        with self._lock:
            if thread_idle:  # in the same step, so that a lookup started now takes this thread
                self._idle += 1
            if self._in_flight.get(lookup.host) is lookup:
                del self._in_flight[lookup.host]
                if lookup.store_id is not None:
                    self._store_lookups[lookup.store_id] -= 1
                    if not self._store_lookups[lookup.store_id]:
                        del self._store_lookups[lookup.store_id]
        lookup.done.set()


_resolver = _Resolver()


def _resolver_reset() -> None:
    # A forked child (a Celery prefork worker) has none of the parent's lookup threads, and the
    # parent's lock may have been held at fork time: it starts afresh.
    global _resolver
    _resolver = _Resolver()


os.register_at_fork(after_in_child=_resolver_reset)


def ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def resolve(host: str, *, timeout: float, store_id: int | None = None) -> list[str]:
    """Every address `host` resolves to (an IP literal is itself), within `timeout` seconds;
    a slower answer raises ResolutionTimeout, a lookup not started (the bounds above)
    ResolverBusy, both socket.gaierror like an unknown name. `store_id`: the store the lookup
    is for, when one is (the bound per store)."""
    if ip_literal(host):
        return [host]
    lookup = _resolver.lookup(host, store_id=store_id)
    if not lookup.done.wait(timeout):
        raise ResolutionTimeout(
            socket.EAI_AGAIN, f"resolving {host} took longer than {timeout:g} s"
        )
    if lookup.error is not None:
        raise socket.gaierror(*lookup.error)
    return list(lookup.addresses)


logger = logging.getLogger(__name__)


class AddressRefused(requests.ConnectionError):
    """Every address of the host is one webhooks may not reach; the message names the host
    and the kind of range, never the address. (A requests error, not a ValueError: requests
    turns a ValueError raised while it picks the pool into InvalidURL.)"""


# A checked answer serves its host's next attempts for WEBHOOKS_CHECKED_ANSWER_SECONDS: its
# address passed the check, so using it again reaches nothing internal (rebinding needs an
# address that was not checked), and those attempts need no lookup (in production a round trip
# to the name server) and find their kept-alive connection in that address's pool. An attempt
# that gets no answer forgets its host's (the receiver may have moved). With the setting at 0
# (the test settings) no answer is kept, and the time of the check is kept rather than an
# expiry, so none kept before is used either.
_answers: dict[str, tuple[str, float]] = {}  # host -> (checked address, monotonic check time)


def checked_address(host: str) -> str:
    """The first address of `host` that webhooks may reach, resolved within what is left of
    the attempt's budget. Raises socket.gaierror (no answer in time) or AddressRefused."""
    address, checked_at = _answers.get(host, ("", float("-inf")))
    if time.monotonic() < checked_at + settings.WEBHOOKS_CHECKED_ANSWER_SECONDS:
        try:
            address_check(address)  # again: the rules may have changed (the dev flag)
            return address
        except UrlRefused:
            pass
    deadline = current_deadline()
    budget = deadline.remaining() if deadline else settings.WEBHOOKS_TIMEOUT_SECONDS
    refusal = None
    for address in resolve(host, timeout=budget):
        try:
            address_check(address)
        except UrlRefused as error:
            # The host, never the URL's path (it may hold a credential).
            logger.info("webhook connection to host %s refused: %s is %s", host, address, error)
            refusal = error
            continue
        if settings.WEBHOOKS_CHECKED_ANSWER_SECONDS and not ip_literal(host):
            _answers[host] = (address, time.monotonic())
        return address
    raise AddressRefused(f"Refused destination: host {host} resolves to {refusal}")


def answer_forget(url: str) -> None:
    """The next attempt to `url`'s host looks it up again."""
    _answers.pop(urlsplit(url).hostname, None)


class _DeadlineConnectionMixin:
    """Puts every connection an attempt uses, new or kept alive, under its deadline."""

    def connect(self) -> None:
        deadline = current_deadline()
        if deadline is not None:
            # The lookup took part of the budget: the connect gets what is left (a timeout of
            # 0 would make the socket non-blocking, not time out).
            left = max(deadline.remaining(), 0.001)
            self.timeout = left if self.timeout is None else min(self.timeout, left)
        super().connect()

    def request(self, *args, **kwargs) -> None:
        deadline = current_deadline()
        if deadline is not None:
            deadline.watch(self)
        super().request(*args, **kwargs)


class DeadlineHTTPConnection(_DeadlineConnectionMixin, HTTPConnection):
    pass


class DeadlineHTTPSConnection(_DeadlineConnectionMixin, HTTPSConnection):
    pass


class DeadlineHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = DeadlineHTTPConnection


class DeadlineHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = DeadlineHTTPSConnection


class CheckedAdapter(HTTPAdapter):
    """Sends each request to the checked address of its host, named as the host."""

    def init_poolmanager(self, *args, **kwargs) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": DeadlineHTTPConnectionPool,
            "https": DeadlineHTTPSConnectionPool,
        }

    def build_connection_pool_key_attributes(self, request, verify, cert=None):
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(
            request, verify, cert
        )
        host = host_params["host"]
        if host_params["scheme"] == "https":
            # SNI and the certificate check are the host's, not the address's.
            pool_kwargs = {**pool_kwargs, "server_hostname": host, "assert_hostname": host}
        # One pool per checked address (and host, for TLS): a kept-alive connection is reused
        # only while the host still resolves to the address it was opened to.
        return {**host_params, "host": checked_address(host)}, pool_kwargs

    def add_headers(self, request, **kwargs) -> None:
        # http.client would name the pool's host, the IP address (RFC 9110 §7.2: the URI's).
        request.headers["Host"] = urlsplit(request.url).netloc


class NoRedirectSession(requests.Session):
    """A session that never looks at a redirect. With `allow_redirects=False` requests still
    works out the next request of a 3xx (its `next`): it reads the whole body, past the
    response limit, and decodes the Location, which raises on a receiver's stray bytes."""

    def get_redirect_target(self, resp) -> None:
        return None


def _session_new() -> requests.Session:
    session = NoRedirectSession()
    session.trust_env = False
    adapter = CheckedAdapter(pool_connections=16, pool_maxsize=4, max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


_session: requests.Session | None = None
# The web's threads share the session (urllib3's pools are thread-safe); making or dropping it
# is one step, so that two threads never each make one and one of them leaks its pools.
_session_lock = threading.Lock()


def session_get() -> requests.Session:
    """One session per process (Celery prefork children each get their own)."""
    global _session
    with _session_lock:
        if _session is None:
            _session = _session_new()
        return _session


def session_reset() -> None:
    """Drops every pooled connection (after a deadline cut one mid-exchange) and every checked
    answer. Another thread's request in flight keeps its connection until it ends."""
    global _session
    with _session_lock:
        _answers.clear()
        session, _session = _session, None
    if session is not None:
        session.close()
