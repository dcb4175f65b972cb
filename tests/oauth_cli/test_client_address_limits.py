"""Every per-address limit keys on core.api.client_address: behind one trusted proxy each
client has its own bucket, and a client cannot choose its bucket with X-Forwarded-For; an IPv6
client's bucket is its /64 (CLIENT_IPV6_PREFIX_LENGTH), not each address it picks in it."""

from django.conf import settings
from django.test import Client, override_settings

from tests.oauth_cli.flow import refresh, via_proxy


def one_proxy():
    return override_settings(
        REST_FRAMEWORK={**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}, OAUTH_RATE_LIMIT_PER_MINUTE=2
    )


def token_status(client, **headers) -> int:
    return refresh(client, "nope", **headers).status_code


def test_behind_one_proxy_two_clients_have_separate_buckets():
    client = Client()
    with one_proxy():
        assert [token_status(client, **via_proxy("198.51.100.1")) for _ in range(3)] == [
            400,
            400,
            429,
        ]
        assert token_status(client, **via_proxy("198.51.100.2")) == 400


def test_a_forged_forwarded_for_does_not_choose_the_bucket():
    client = Client()
    with one_proxy():
        for forged in ("203.0.113.1", "203.0.113.2"):
            assert token_status(client, **via_proxy("198.51.100.1", forged=forged)) == 400
        # a third forged address: still the same client, whose budget is spent
        assert token_status(client, **via_proxy("198.51.100.1", forged="203.0.113.3")) == 429


@override_settings(OAUTH_RATE_LIMIT_PER_MINUTE=2)
def test_without_a_proxy_the_forwarded_for_header_is_ignored():
    client = Client()
    for forged in ("203.0.113.1", "203.0.113.2"):
        assert token_status(client, REMOTE_ADDR="198.51.100.1", HTTP_X_FORWARDED_FOR=forged) == 400
    assert (
        token_status(client, REMOTE_ADDR="198.51.100.1", HTTP_X_FORWARDED_FOR="203.0.113.3") == 429
    )


@override_settings(OAUTH_RATE_LIMIT_PER_MINUTE=2)
def test_addresses_of_one_ipv6_64_share_a_bucket_and_the_next_64_has_its_own():
    client = Client()
    statuses = [
        token_status(client, REMOTE_ADDR=address)
        for address in ("2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff::3")
    ]
    assert statuses == [400, 400, 429]
    assert token_status(client, REMOTE_ADDR="2001:db8:1:3::1") == 400


def test_behind_one_proxy_an_ipv6_client_is_bucketed_by_its_64():
    client = Client()
    with one_proxy():
        statuses = [
            token_status(client, **via_proxy(f"2001:db8:1:2::{n}", forged=f"2001:db8:9:{n}::1"))
            for n in (1, 2, 3)
        ]
        assert statuses == [400, 400, 429]
        assert token_status(client, **via_proxy("2001:db8:1:3::1")) == 400


@override_settings(OAUTH_RATE_LIMIT_PER_MINUTE=2, CLIENT_IPV6_PREFIX_LENGTH=128)
def test_the_ipv6_bucket_size_follows_the_setting():
    client = Client()
    for n in (1, 2, 3):
        assert token_status(client, REMOTE_ADDR=f"2001:db8:1:2::{n}") == 400
