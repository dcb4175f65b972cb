"""The client's IP address, the one key of every per-address limit.

Behind `NUM_PROXIES` trusted reverse proxies (DRF's setting, from the environment) each proxy
appends the address it received the request from to `X-Forwarded-For`, so the client is the
`NUM_PROXIES`-th entry from the right; everything left of it was written by the client and is
never read. With no proxy (0) the header is ignored and the TCP peer is the client.
"""

import ipaddress

from rest_framework.settings import api_settings

UNKNOWN_CLIENT_ADDRESS = "unknown"


def client_address(request) -> str:
    """The client's IP address as seen through the trusted proxies (a Django or DRF request).

    Like DRF's `SimpleRateThrottle.get_ident`, except that a header with fewer entries than
    there are trusted proxies (a request that bypassed one) or an entry that is not an IP
    address falls back to the TCP peer instead of trusting the leftmost, client-written entry.
    """
    meta = request.META
    peer = _normalized(meta.get("REMOTE_ADDR", "")) or UNKNOWN_CLIENT_ADDRESS
    hops = api_settings.NUM_PROXIES or 0
    if hops <= 0:
        return peer
    forwarded = [entry.strip() for entry in meta.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    if len(forwarded) < hops:
        return peer
    return _normalized(forwarded[-hops]) or peer


def _normalized(value: str) -> str | None:
    """The canonical text of an IP address (one bucket per address, however written)."""
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        return None
