"""Which destination URLs and IP addresses webhooks may reach (DESIGN.md "Webhooks": SSRF).

Checked twice: when a destination is saved (the URL and every address its host resolves to)
and when an attempt connects (the address actually connected to; see webhooks/sender.py), so a
DNS answer that changes after the save (DNS rebinding) cannot reach an internal address.
"""

import ipaddress
import os
import re
import socket
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

from django.conf import settings

MAX_URL_LENGTH = 2048
# The URL shape in the OpenAPI schema: scheme, a host name or IPv4 literal (IPv6 literals are
# not taken: use a name), an optional port (1..65535), then path and query of the characters
# RFC 3986 §3.3-3.4 allows (anything else percent-encoded); no credentials, no fragment. The
# address checks below decide the rest.
URL_PATTERN = (
    r"^https?://(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*)"
    r"(?::(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}"
    r"|[1-9][0-9]{0,3}))?(?:[/?](?:[A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*)?$"
)
URL_PATTERN_COMPILED = re.compile(URL_PATTERN)
# Cloud metadata services: refused even when private destinations are allowed (dev, tests).
METADATA_ADDRESSES = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)


class DestinationRefused(ValueError):
    """The URL or the address it resolves to may not be sent to; the message says why."""


def private_destinations_allowed() -> bool:
    return bool(settings.WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS)


def _unwrap(address: ipaddress.IPv4Address | ipaddress.IPv6Address):
    """The IPv4 address inside an IPv4-mapped or NAT64 IPv6 address (same host reached)."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address in ipaddress.ip_network("64:ff9b::/96"):
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def address_check(raw_address: str) -> None:
    """Raises DestinationRefused unless the IP may be connected to."""
    address = _unwrap(ipaddress.ip_address(raw_address.split("%", 1)[0]))
    if address in METADATA_ADDRESSES:
        raise DestinationRefused(f"{address} is a cloud metadata address")
    if address.is_link_local:
        raise DestinationRefused(f"{address} is a link-local address")
    if private_destinations_allowed():
        return
    if address.is_loopback:
        raise DestinationRefused(f"{address} is a loopback address")
    if address.is_private:
        raise DestinationRefused(f"{address} is a private address")
    if not address.is_global or address.is_multicast or address.is_unspecified:
        raise DestinationRefused(f"{address} is not a public address")


# getaddrinfo has no timeout of its own; lookups run on these threads so that a slow resolver
# costs a caller at most its timeout (the lookup is abandoned, not cancelled). Per process: a
# pool's threads do not survive a fork (Celery prefork children).
_RESOLVER_THREADS = 4
_resolver: tuple[int, ThreadPoolExecutor] | None = None


def _resolver_pool() -> ThreadPoolExecutor:
    global _resolver
    if _resolver is None or _resolver[0] != os.getpid():
        _resolver = (os.getpid(), ThreadPoolExecutor(_RESOLVER_THREADS, "webhooks-dns"))
    return _resolver[1]


def resolve(host: str, port: int, *, timeout: float) -> list[str]:
    """Every address `host` resolves to (an IP literal resolves to itself), within `timeout`
    seconds; a slower answer raises socket.gaierror like an unknown name."""
    lookup = _resolver_pool().submit(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
    try:
        infos = lookup.result(timeout=timeout)
    except TimeoutError:
        raise socket.gaierror(
            socket.EAI_AGAIN, f"resolving {host} took longer than {timeout:g} s"
        ) from None
    return list(dict.fromkeys(info[4][0] for info in infos))


def url_check(url: str) -> str:
    """Validates a destination URL at save time; returns it. Raises DestinationRefused."""
    if len(url) > MAX_URL_LENGTH:
        raise DestinationRefused(f"must be at most {MAX_URL_LENGTH} characters")
    if not URL_PATTERN_COMPILED.match(url):
        raise DestinationRefused(
            "must be an absolute URL: scheme, host and optional port, path and query of "
            "RFC 3986 characters (percent-encode others), no credentials, no fragment"
        )
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise DestinationRefused("is not a valid URL") from None
    allowed_schemes = ("https", "http") if private_destinations_allowed() else ("https",)
    if parts.scheme not in allowed_schemes:
        raise DestinationRefused("must be an https URL")
    if not parts.hostname:
        raise DestinationRefused("must name a host")
    if parts.username is not None or parts.password is not None:
        raise DestinationRefused("may not contain credentials")
    if parts.fragment:
        raise DestinationRefused("may not contain a fragment")
    port = port or (443 if parts.scheme == "https" else 80)
    try:
        addresses = resolve(parts.hostname, port, timeout=settings.WEBHOOKS_TIMEOUT_SECONDS)
    except (OSError, UnicodeError):
        if private_destinations_allowed():
            return url
        raise DestinationRefused(f"host {parts.hostname} does not resolve") from None
    for address in addresses:
        address_check(address)
    return url


def url_origin(url: str) -> str:
    """scheme://host[:port] of a URL: what the API shows instead of the full URL."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    origin = f"{parts.scheme}://{host}"
    if parts.port is not None:
        origin += f":{parts.port}"
    return origin
