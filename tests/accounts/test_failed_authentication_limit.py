"""Failed bearer authentications are limited per client address (IPv6: per /64):
after API_AUTH_FAILURES_PER_MINUTE bogus credentials an address gets 429, and further
bogus credentials from it are refused before any credential lookup. Only
failures are refused; a credential that authenticates is served from that address."""

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from accounts import identity
from accounts.models import ApiKey
from accounts.services import api_key_revoke
from tests.factories import make_api_key

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("rate_limit_window")]

BOGUS_KEY = "sf_" + "x" * 40
ATTACKER_IP = "203.0.113.9"


def get_me(secret: str, ip: str):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client.get("/api/v2/me", REMOTE_ADDR=ip)


def spend_the_budget(ip: str = ATTACKER_IP, secret: str = BOGUS_KEY):
    for _ in range(settings.API_AUTH_FAILURES_PER_MINUTE):
        assert get_me(secret, ip).status_code == 401


def assert_refused(response, *, retry_after: str = "30"):
    assert response.status_code == 429
    body = response.json()
    assert body["code"] == "rate_limit_exceeded"
    assert body["type"] == "rate_limit_error"
    assert response["Retry-After"] == retry_after
    assert response["X-RateLimit-Limit"] == str(settings.API_AUTH_FAILURES_PER_MINUTE)
    assert response["X-RateLimit-Remaining"] == "0"


def test_by_default_the_31st_bogus_key_of_a_minute_is_refused():
    for _ in range(30):
        assert get_me(BOGUS_KEY, ATTACKER_IP).status_code == 401

    assert_refused(get_me(BOGUS_KEY, ATTACKER_IP))


def test_after_the_limit_of_bogus_keys_the_address_gets_429_with_retry_after():
    spend_the_budget()

    # the clock stands 30 s into the window
    assert_refused(get_me(BOGUS_KEY, ATTACKER_IP))


@pytest.mark.parametrize("token", ["not-a-key", "sf_" + "y" * 40, "at_" + "z" * 43])
def test_any_kind_of_bogus_token_counts(token):
    spend_the_budget(secret=token)

    assert_refused(get_me(token, ATTACKER_IP))


def test_a_malformed_authorization_header_counts():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer two parts")
    for _ in range(settings.API_AUTH_FAILURES_PER_MINUTE):
        assert client.get("/api/v2/me", REMOTE_ADDR=ATTACKER_IP).status_code == 401

    assert_refused(client.get("/api/v2/me", REMOTE_ADDR=ATTACKER_IP))


def test_over_the_limit_a_valid_key_is_served_and_bogus_keys_cost_no_query(
    user, store, django_assert_num_queries
):
    # given: an integration's key, and an address that spent its budget on bogus keys
    valid = make_api_key(user)
    spend_the_budget()
    assert_refused(get_me(BOGUS_KEY, ATTACKER_IP))

    # then: the valid key is served (read from the database on its first requests here)
    for _ in range(3):
        assert get_me(valid, ATTACKER_IP).status_code == 200
    # and each further bogus key is refused before any database query, the valid one too
    with django_assert_num_queries(0):
        assert_refused(get_me(BOGUS_KEY, ATTACKER_IP))
        assert_refused(get_me("sf_" + "z" * 40, ATTACKER_IP))
        assert get_me(valid, ATTACKER_IP).status_code == 200
        assert_refused(get_me("not-a-key", ATTACKER_IP))


def test_a_valid_key_never_seen_by_this_process_is_served_over_the_limit(user, store, monkeypatch):
    valid = make_api_key(user)
    assert get_me(valid, "198.51.100.20").status_code == 200
    spend_the_budget()
    assert_refused(get_me(BOGUS_KEY, ATTACKER_IP))
    # a process that kept no identity (another worker, a restart): Redis knows the credential
    monkeypatch.setattr(identity, "_identities", {})

    assert get_me(valid, ATTACKER_IP).status_code == 200


def test_over_the_limit_a_valid_key_keeps_its_own_rate_limit(user, store, settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 3
    valid = make_api_key(user)
    spend_the_budget()

    for remaining in ("2", "1", "0"):
        response = get_me(valid, ATTACKER_IP)
        assert response.status_code == 200
        assert response["X-RateLimit-Remaining"] == remaining
    response = get_me(valid, ATTACKER_IP)
    assert response.status_code == 429
    assert response["X-RateLimit-Limit"] == "3"


def test_over_the_limit_a_revoked_key_is_a_failure_and_then_costs_no_query(
    user, store, django_assert_num_queries
):
    valid = make_api_key(user)
    for _ in range(3):  # kept by this process, and current
        assert get_me(valid, ATTACKER_IP).status_code == 200
    spend_the_budget()
    api_key_revoke(api_key=ApiKey.objects.get(user=user))

    assert_refused(get_me(valid, ATTACKER_IP))
    with django_assert_num_queries(0):
        assert_refused(get_me(valid, ATTACKER_IP))


def test_a_key_redis_lost_is_refused_over_the_limit_until_it_authenticates_elsewhere(
    user, store, cache_cleared, monkeypatch
):
    # The decision (docs/decisions/hardening.md, Hardening IV point 2): from an address over
    # its budget, a key this process does not know is read only if Redis knows it.
    valid = make_api_key(user)
    spend_the_budget()
    cache_cleared()  # a Redis restart: the budget and the credential's epoch are gone
    monkeypatch.setattr(identity, "_identities", {})
    spend_the_budget()
    assert_refused(get_me(BOGUS_KEY, ATTACKER_IP))

    assert_refused(get_me(valid, ATTACKER_IP))
    assert get_me(valid, "198.51.100.20").status_code == 200
    assert get_me(valid, ATTACKER_IP).status_code == 200


def test_a_valid_key_from_another_address_is_unaffected(user, store):
    valid = make_api_key(user)
    spend_the_budget()

    assert get_me(valid, "198.51.100.20").status_code == 200
    # and a bogus key from there is still an ordinary 401
    assert get_me(BOGUS_KEY, "198.51.100.20").status_code == 401


def test_valid_keys_do_not_spend_the_budget(user, store):
    valid = make_api_key(user)
    for _ in range(settings.API_AUTH_FAILURES_PER_MINUTE):
        assert get_me(valid, ATTACKER_IP).status_code == 200

    assert get_me(BOGUS_KEY, ATTACKER_IP).status_code == 401


def test_addresses_of_one_ipv6_64_share_the_budget_and_the_next_64_has_its_own(user, store):
    for n in range(settings.API_AUTH_FAILURES_PER_MINUTE):
        assert get_me(BOGUS_KEY, f"2001:db8:1:2::{n + 1:x}").status_code == 401

    assert_refused(get_me(BOGUS_KEY, "2001:db8:1:2:ffff::1"))
    assert get_me(make_api_key(user), "2001:db8:1:2:ffff::2").status_code == 200
    assert_refused(get_me(BOGUS_KEY, "2001:db8:1:2:ffff::2"))
    assert get_me(BOGUS_KEY, "2001:db8:1:3::1").status_code == 401


def test_the_next_window_brings_a_fresh_budget(user, store, rate_limit_window):
    spend_the_budget()
    assert get_me(BOGUS_KEY, ATTACKER_IP).status_code == 429

    rate_limit_window.shift(30)

    assert get_me(make_api_key(user), ATTACKER_IP).status_code == 200
    assert get_me(BOGUS_KEY, ATTACKER_IP).status_code == 401
