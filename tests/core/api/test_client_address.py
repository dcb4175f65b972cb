"""core.api.client_address: the client behind NUM_PROXIES trusted proxies, never a forged one,
and the key of the per-address limits (IPv6: the client's network)."""

import pytest
from django.conf import settings
from django.test import RequestFactory, override_settings

from core.api.client_address import client_address, client_address_key


def behind(hops: int):
    return override_settings(REST_FRAMEWORK={**settings.REST_FRAMEWORK, "NUM_PROXIES": hops})


def request_from(peer: str, forwarded_for: str | None = None):
    headers = {"REMOTE_ADDR": peer}
    if forwarded_for is not None:
        headers["HTTP_X_FORWARDED_FOR"] = forwarded_for
    return RequestFactory().get("/", **headers)


def test_by_default_no_proxy_is_trusted_and_the_header_is_ignored():
    assert client_address(request_from("198.51.100.7", "203.0.113.1")) == "198.51.100.7"


@pytest.mark.parametrize(
    ("hops", "forwarded_for", "client"),
    [
        # the proxy appended the peer it saw; what the client wrote stays on the left
        (1, "198.51.100.7", "198.51.100.7"),
        (1, "203.0.113.1, 198.51.100.7", "198.51.100.7"),
        (1, "203.0.113.1,198.51.100.7", "198.51.100.7"),
        (2, "203.0.113.1, 198.51.100.7, 10.0.0.2", "198.51.100.7"),
        (1, "2001:DB8:0:0::1", "2001:db8::1"),
    ],
)
def test_the_client_is_the_entry_the_outermost_trusted_proxy_wrote(hops, forwarded_for, client):
    with behind(hops):
        assert client_address(request_from("10.0.0.1", forwarded_for)) == client


@pytest.mark.parametrize(
    "forwarded_for",
    [
        None,  # the request did not come through the proxy
        "",
        "198.51.100.7",  # fewer entries than trusted proxies: the leftmost is the client's own
        "not-an-address, 10.0.0.2",
        "unknown, 10.0.0.2",
    ],
)
def test_a_header_the_trusted_proxies_cannot_have_written_falls_back_to_the_peer(forwarded_for):
    with behind(2):
        assert client_address(request_from("10.0.0.1", forwarded_for)) == "10.0.0.1"


@pytest.mark.parametrize(
    ("peer", "key"),
    [
        ("198.51.100.7", "198.51.100.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:DB8:1:2::FFFF", "2001:db8:1:2::/64"),
        ("::ffff:198.51.100.7", "198.51.100.7"),  # a dual-stack socket's IPv4 client
        ("::1", "::/64"),
        ("not-an-address", "unknown"),
    ],
)
def test_the_limit_key_is_the_ipv4_address_or_the_ipv6_64(peer, key):
    with behind(0):
        assert client_address_key(request_from(peer)) == key


@pytest.mark.parametrize(("prefix", "key"), [(48, "2001:db8:1::/48"), (128, "2001:db8:1:2::9/128")])
def test_the_ipv6_network_size_is_the_setting(prefix, key):
    with behind(0), override_settings(CLIENT_IPV6_PREFIX_LENGTH=prefix):
        assert client_address_key(request_from("2001:db8:1:2::9")) == key


def test_the_limit_key_behind_a_proxy_is_the_network_of_the_entry_it_wrote():
    with behind(1):
        request = request_from("10.0.0.1", "2001:db8:9::1, 2001:db8:1:2::7")
        assert client_address_key(request) == "2001:db8:1:2::/64"
        # the address itself is unchanged, for what is not a limit (the metrics allow-list)
        assert client_address(request) == "2001:db8:1:2::7"
