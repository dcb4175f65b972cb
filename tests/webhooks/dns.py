"""Name resolution as the webhooks tests control it. The machine has no outside DNS and DNS is
outside the system, so socket.getaddrinfo is replaced for the names a test owns; every other
name goes to the real getaddrinfo."""

import ipaddress
import socket
import struct
import uuid

HOST = "target.example.com"
PUBLIC_IPV4 = "93.184.216.34"
STALLED_DOMAIN = "stalled.example.com"


class FakeDns:
    """socket.getaddrinfo answering `host` with `address`, or failing like an unknown name when
    `address` is None."""

    def __init__(self, monkeypatch, address: str | None, host: str = HOST):
        self.address = address
        self.host = host
        self.lookups = 0  # of `host`
        real = socket.getaddrinfo

        def getaddrinfo(host, port, *args, **kwargs):
            if host != self.host:
                return real(host, port, *args, **kwargs)
            self.lookups += 1
            if self.address is None:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            if ipaddress.ip_address(self.address).version == 6:
                return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", (self.address, port, 0, 0))]
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (self.address, port))]

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def dns_query(name: str) -> bytes:
    """An RFC 1035 §4.1 query for the A record of `name`, recursion desired."""
    header = struct.pack("!HHHHHH", 0x5EB0, 0x0100, 1, 0, 0, 0)
    question = b"".join(bytes([len(label)]) + label.encode() for label in name.split("."))
    return header + question + b"\0" + struct.pack("!HH", 1, 1)


def stalled_name(label: str = "") -> str:
    """A name of its own under STALLED_DOMAIN: no lookup of an earlier test is still in flight
    for it."""
    return f"{label or 'h'}-{uuid.uuid4().hex[:12]}.{STALLED_DOMAIN}"


class UnresponsiveNameServer:
    """A UDP name server on 127.0.0.1 that takes every query and never answers, and a stub
    resolver pointed at it in place of the system's getaddrinfo for STALLED_DOMAIN and every
    name under it: a lookup blocks on the socket, as one behind a dropped or overloaded
    resolver does. Each lookup sends one query, so the queries received count the lookups."""

    def __init__(self, monkeypatch):
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.1", 0))
        self.address = self.socket.getsockname()
        self.queries: list[tuple[bytes, tuple]] = []
        real = socket.getaddrinfo

        def getaddrinfo(host, port, *args, **kwargs):
            if host != STALLED_DOMAIN and not host.endswith("." + STALLED_DOMAIN):
                return real(host, port, *args, **kwargs)
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as stub:
                stub.settimeout(120)  # only a safety net: release() ends the wait
                stub.sendto(dns_query(host), self.address)
                stub.recvfrom(512)
            raise socket.gaierror(socket.EAI_FAIL, "no usable answer")

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)

    def received(self, count: int, timeout: float = 5) -> list[bytes]:
        """The first `count` queries, waiting up to `timeout` s for each one still missing."""
        self.socket.settimeout(timeout)
        while len(self.queries) < count:
            self.queries.append(self.socket.recvfrom(512))
        return [query for query, _ in self.queries[:count]]

    def received_within(self, seconds: float) -> list[bytes]:
        """Every query received so far and in the next `seconds`."""
        self.socket.settimeout(seconds)
        try:
            while True:
                self.queries.append(self.socket.recvfrom(512))
        except TimeoutError:
            pass
        return [query for query, _ in self.queries]

    def release(self):
        """Answers every waiting stub with garbage, so no lookup thread outlives the test."""
        self.socket.setblocking(False)
        while True:
            try:
                self.queries.append(self.socket.recvfrom(512))
            except BlockingIOError:
                break
        for _, client in self.queries:
            self.socket.sendto(b"\0", client)
        self.queries.clear()

    def close(self):
        self.release()
        self.socket.close()
