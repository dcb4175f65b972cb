"""The client's IP address, and the key every per-address limit counts it under.

Behind `NUM_PROXIES` trusted proxies (DRF's setting) the client is the `NUM_PROXIES`-th
`X-Forwarded-For` entry from the right (entries left of it are the client's own writing); with
none, the TCP peer. An IPv6 client holds a whole network (a /64 at least, in which it picks any
address), so limits key on its network of `CLIENT_IPV6_PREFIX_LENGTH` bits, not on /128s.
"""

import ipaddress

from django.conf import settings
from rest_framework.settings import api_settings

UNKNOWN_CLIENT_ADDRESS = "unknown"


def client_address(request) -> str:
    """The client's IP address as seen through the trusted proxies (a Django or DRF request).

    Like DRF's `SimpleRateThrottle.get_ident`, except that a header with fewer entries than
    there are trusted proxies (a request that bypassed one) or an entry that is not an IP
    address falls back to the TCP peer instead of trusting the leftmost, client-written entry.
    """
    address = _client_ip(request)
    return UNKNOWN_CLIENT_ADDRESS if address is None else str(address)


def client_address_key(request) -> str:
    """The key of every per-address limit (sign-ins, failed API authentications, the OAuth
    endpoints, the probes): the IPv4 address, or the IPv6 network of CLIENT_IPV6_PREFIX_LENGTH.

    An IPv4-mapped IPv6 address (`::ffff:198.51.100.7`, from a dual-stack socket) is its IPv4
    address: as an IPv6 one, every IPv4 client would fall into the one network `::/64`.
    """
    address = _client_ip(request)
    if address is None:
        return UNKNOWN_CLIENT_ADDRESS
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.version == 4:
        return str(address)
    network = ipaddress.IPv6Network((address, settings.CLIENT_IPV6_PREFIX_LENGTH), strict=False)
    return str(network)


def _client_ip(request) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    meta = request.META
    peer = _ip(meta.get("REMOTE_ADDR", ""))
    hops = api_settings.NUM_PROXIES or 0
    if hops <= 0:
        return peer
    forwarded = [entry.strip() for entry in meta.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    if len(forwarded) < hops:
        return peer
    client = _ip(forwarded[-hops])
    return peer if client is None else client


def _ip(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address `value` spells (one bucket per address, however written), or None."""
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None
