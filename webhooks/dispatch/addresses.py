"""Which channel URLs and IP addresses webhooks may reach (docs/design.md "Webhooks": SSRF).

Checked twice: when a channel is saved (the URL and every address its host resolves to) and when an
attempt connects (the address actually connected to; see webhooks/dispatch/connection.py), so a DNS
answer that changes after the save (DNS rebinding) cannot reach an internal address. Names are
resolved by webhooks/dispatch/connection.py.

The judgment is an explicit deny list, not `ipaddress.is_global` (which lets through
192.0.0.0/24, fec0::/10, 6to4 and NAT64 wrapping private IPv4, IPv4-compatible addresses and
Teredo): every entry of the IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890),
including those marked globally reachable (anycast services such as PCP, TURN, AS112 and AMT
answer from the nearest instance, which may be inside our network, and none is a webhook
receiver), plus multicast, deprecated site-local and IPv4-compatible space, and every IPv6
address outside global unicast 2000::/3 (IANA IPv6 Address Space registry). An IPv6 address
that carries an IPv4 address (IPv4-mapped, IPv4-compatible, 6to4, NAT64 well-known and
local-use, Teredo server and client) is judged as each of them too.

What the API caller reads: an IP literal's refusal names its kind of range; a name's refusal
is one message whether the name does not resolve, answers too late or resolves to a refused
address, so that it tells nothing of which internal names exist or where they point. The
operators' log has the detail (host, address, kind; never the URL's path). An attempt's stored
error names the kind, never the address; the API does not show it (the admin does).
"""

import functools
import ipaddress
import logging
import re
from dataclasses import dataclass

from django.conf import settings

logger = logging.getLogger(__name__)

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
# Cloud metadata services: refused even when private channels are allowed (dev, tests).
# AWS/GCP/Azure/Oracle (169.254.169.254), AWS over IPv6, Alibaba Cloud (in shared 100.64/10).
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(address)
    for address in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")
)


@dataclass(frozen=True)
class DeniedRange:
    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    kind: str  # what a refusal says (the registry's name), never the address
    # Refused even with WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: a local receiver never needs it.
    always: bool = False


def _denied(network: str, kind: str, *, always: bool = False) -> DeniedRange:
    return DeniedRange(ipaddress.ip_network(network), kind, always)


# More specific entries first, so a refusal names the narrowest kind.
DENIED_RANGES: tuple[DeniedRange, ...] = (
    # IANA IPv4 Special-Purpose Address Registry (RFC 6890 and its updates)
    _denied("0.0.0.0/8", "'this network'"),  # RFC 791; 0.0.0.0 reaches this host on Linux
    _denied("10.0.0.0/8", "private-use"),  # RFC 1918
    _denied("100.64.0.0/10", "shared address space (carrier-grade NAT)"),  # RFC 6598
    _denied("127.0.0.0/8", "loopback"),  # RFC 1122
    _denied("169.254.0.0/16", "link-local", always=True),  # RFC 3927
    _denied("172.16.0.0/12", "private-use"),  # RFC 1918
    _denied("192.0.0.0/29", "IPv4 service continuity prefix"),  # RFC 7335
    _denied("192.0.0.8/32", "IPv4 dummy address"),  # RFC 7600
    _denied("192.0.0.9/32", "PCP anycast"),  # RFC 7723
    _denied("192.0.0.10/32", "TURN anycast"),  # RFC 8155
    _denied("192.0.0.170/31", "NAT64/DNS64 discovery"),  # RFC 7050
    _denied("192.0.0.0/24", "IETF protocol assignments"),  # RFC 6890
    _denied("192.0.2.0/24", "documentation (TEST-NET-1)"),  # RFC 5737
    _denied("192.31.196.0/24", "AS112 anycast"),  # RFC 7535
    _denied("192.52.193.0/24", "AMT anycast"),  # RFC 7450
    _denied("192.88.99.0/24", "deprecated 6to4 relay anycast"),  # RFC 7526
    _denied("192.168.0.0/16", "private-use"),  # RFC 1918
    _denied("192.175.48.0/24", "AS112 direct delegation"),  # RFC 7534
    _denied("198.18.0.0/15", "benchmarking"),  # RFC 2544
    _denied("198.51.100.0/24", "documentation (TEST-NET-2)"),  # RFC 5737
    _denied("203.0.113.0/24", "documentation (TEST-NET-3)"),  # RFC 5737
    _denied("224.0.0.0/4", "multicast"),  # RFC 5771
    _denied("255.255.255.255/32", "limited broadcast"),  # RFC 919
    _denied("240.0.0.0/4", "reserved"),  # RFC 1112
    # IANA IPv6 Special-Purpose Address Registry
    _denied("::/128", "unspecified"),  # RFC 4291
    _denied("::1/128", "loopback"),  # RFC 4291
    _denied("::/96", "deprecated IPv4-compatible"),  # RFC 4291 §2.5.5.1
    _denied("64:ff9b:1::/48", "local-use IPv4/IPv6 translation"),  # RFC 8215
    _denied("100::/64", "discard-only"),  # RFC 6666
    _denied("100:0:0:1::/64", "dummy IPv6 prefix"),  # RFC 9780
    _denied("2001::/32", "Teredo"),  # RFC 4380
    _denied("2001:1::1/128", "PCP anycast"),  # RFC 7723
    _denied("2001:1::2/128", "TURN anycast"),  # RFC 8155
    _denied("2001:1::3/128", "DNS-SD SRP anycast"),  # RFC 9665
    _denied("2001:2::/48", "benchmarking"),  # RFC 5180
    _denied("2001:3::/32", "AMT anycast"),  # RFC 7450
    _denied("2001:4:112::/48", "AS112 anycast"),  # RFC 7535
    _denied("2001:10::/28", "deprecated ORCHID"),  # RFC 4843
    _denied("2001:20::/28", "ORCHIDv2"),  # RFC 7343
    _denied("2001:30::/28", "drone remote ID entity tags"),  # RFC 9374
    _denied("2001::/23", "IETF protocol assignments"),  # RFC 2928
    _denied("2001:db8::/32", "documentation"),  # RFC 3849
    _denied("2620:4f:8000::/48", "AS112 direct delegation"),  # RFC 7534
    _denied("3fff::/20", "documentation"),  # RFC 9637
    _denied("5f00::/16", "segment routing (SRv6) SIDs"),  # RFC 9602
    _denied("fc00::/7", "unique-local"),  # RFC 4193
    _denied("fe80::/10", "link-local", always=True),  # RFC 4291
    _denied("fec0::/10", "deprecated site-local"),  # RFC 3879
    _denied("ff00::/8", "multicast"),  # RFC 4291
)
# IANA IPv6 Address Space: only 2000::/3 is global unicast; the rest is reserved or one of
# the kinds above. The two translation prefixes outside it are judged by the IPv4 they carry.
IPV6_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")
IPV4_MAPPED = ipaddress.ip_network("::ffff:0:0/96")  # RFC 4291 §2.5.5.2
IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # RFC 2765 (SIIT)
NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052
NAT64_LOCAL_USE = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


class UrlRefused(ValueError):
    """The URL or the address it resolves to may not be sent to; the message says why."""


def private_channels_allowed() -> bool:
    return bool(settings.WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS)


def _rfc6052_ipv4(address: ipaddress.IPv6Address, prefix_length: int) -> ipaddress.IPv4Address:
    """The IPv4 address embedded after a NAT64 prefix of `prefix_length` bits (RFC 6052 §2.2:
    bits 64..71, the "u" octet, are skipped)."""
    octets = address.packed
    embedded = [octets[i] for i in range(prefix_length // 8, 16) if i != 8][:4]
    return ipaddress.IPv4Address(bytes(embedded))


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address an IPv6 address carries, each a host a packet to it may reach."""
    low_32_bits = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.ipv4_mapped is not None:
        return [address.ipv4_mapped]
    if address in IPV4_TRANSLATED:
        return [low_32_bits]
    if address in IPV4_COMPATIBLE and int(address) > 1:  # not :: or ::1
        return [low_32_bits]
    if address.sixtofour is not None:
        return [address.sixtofour]
    if address.teredo is not None:
        # (server, client); the client address is stored XOR 0xffffffff (RFC 4380 §4)
        return list(address.teredo)
    if address in NAT64_WELL_KNOWN:
        return [_rfc6052_ipv4(address, 96)]
    if address in NAT64_LOCAL_USE:
        # The operator picks the prefix length (48..96 within this /48): judge every reading.
        return [_rfc6052_ipv4(address, length) for length in (48, 56, 64, 96)]
    return []


# DENIED_RANGES as integer bounds per IP version, in the same order: every attempt checks the
# address it connects to, and comparing integers costs a tenth of `address in network`.
_DENIED_BOUNDS: dict[int, tuple[tuple[int, int, DeniedRange], ...]] = {
    version: tuple(
        (int(denied.network.network_address), int(denied.network.broadcast_address), denied)
        for denied in DENIED_RANGES
        if denied.network.version == version
    )
    for version in (4, 6)
}


def _denied_range(address) -> DeniedRange | None:
    value = int(address)
    for first, last, denied in _DENIED_BOUNDS[address.version]:
        if first <= value <= last:
            return denied
    return None


def refusal_kind(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """The kind of range that makes `address` unreachable for webhooks, or None if allowed.

    The address and every IPv4 address it carries are judged; what is refused even with the
    dev flag is looked for first, then the address's own range, then the carried ones'."""
    candidates = [address, *(embedded_ipv4(address) if address.version == 6 else [])]

    def kind(candidate, denied: DeniedRange) -> str:
        return (
            denied.kind
            if candidate is address
            else f"{denied.kind}, as the IPv4 address it carries"
        )

    judged = [(candidate, _denied_range(candidate)) for candidate in candidates]
    for candidate, denied in judged:
        if candidate in METADATA_ADDRESSES:
            return "cloud metadata"
        if denied is not None and denied.always:
            return kind(candidate, denied)
    if private_channels_allowed():
        return None
    for candidate, denied in judged:
        if denied is not None:
            return kind(candidate, denied)
    if (
        address.version == 6
        and address not in IPV6_GLOBAL_UNICAST
        and not any(address in network for network in (IPV4_MAPPED, NAT64_WELL_KNOWN))
    ):
        return "reserved IPv6"
    return None


# Every attempt checks the address it connects to, mostly the same few: the judgment depends
# only on the address and the dev flag (the deny list is constant), so it is kept.
@functools.lru_cache(maxsize=4096)
def _refusal_kind_of(raw_address: str, private_allowed: bool) -> str | None:
    return refusal_kind(ipaddress.ip_address(raw_address.split("%", 1)[0]))


def address_check(raw_address: str) -> None:
    """Raises UrlRefused unless the IP may be connected to; the message ("an address
    webhooks may not reach (kind) ...") names the kind of range, never the address."""
    kind = _refusal_kind_of(raw_address, private_channels_allowed())
    if kind is not None:
        raise UrlRefused(
            f"an address webhooks may not reach ({kind}); only public internet addresses "
            "are allowed"
        )
