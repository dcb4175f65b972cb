"""Name resolution for webhooks, bounded in time and in threads (docs/decisions/hardening.md
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
"""

import ipaddress
import logging
import os
import queue
import socket
import threading
from collections import Counter
from dataclasses import dataclass, field

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
