"""Password guessing on both sign-in pages (the CLI's /accounts/login/ and the admin's) is
limited per client address and per username, with one answer that reveals no username."""

import re
import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client, override_settings

from tests.factories import UserFactory

CLI_LOGIN = "/accounts/login/"
ADMIN_LOGIN = "/admin/login/"
LOGIN_PAGES = [CLI_LOGIN, ADMIN_LOGIN]


def sign_in(path: str, username: str, password: str, ip: str = "198.51.100.1"):
    return Client().post(path, {"username": username, "password": password}, REMOTE_ADDR=ip)


def signed_in(response) -> bool:
    return response.status_code == 302


def fail(path: str, times: int, *, username: str = "alice", ip: str = "198.51.100.1"):
    """Wrong passwords; the one that reaches the limit is already answered with the lockout."""
    for _ in range(times):
        response = sign_in(path, username, "wrong", ip=ip)
        assert response.status_code in (200, 429)


def without_nonce(response) -> str:
    return re.sub(r'nonce="[^"]*"', "", response.content.decode())


@pytest.fixture
def staff(db):
    return UserFactory(username="alice", is_staff=True, is_superuser=True)


def test_the_default_limit_is_10_failures_per_15_minutes():
    assert settings.LOGIN_FAILURE_LIMIT == 10
    assert settings.LOGIN_LOCKOUT_MINUTES == 15


@pytest.mark.parametrize("path", LOGIN_PAGES)
def test_below_the_limit_a_failure_is_a_form_error_and_the_right_password_signs_in(path, staff):
    for _ in range(settings.LOGIN_FAILURE_LIMIT - 1):
        response = sign_in(path, "alice", "wrong")
        assert response.status_code == 200
        assert response.context["form"].non_field_errors()

    assert signed_in(sign_in(path, "alice", "password"))


@pytest.mark.parametrize("path", LOGIN_PAGES)
def test_after_the_limit_even_the_right_password_is_refused_with_429(path, staff):
    # given: ten wrong passwords for alice, each from another address
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        fail(path, 1, ip=f"203.0.113.{n + 1}")

    # when: the right one, from an address that never failed
    response = sign_in(path, "alice", "password", ip="198.51.100.99")

    # then
    assert response.status_code == 429
    assert response["Retry-After"] == str(15 * 60)
    assert "Too many failed sign-in attempts" in response.content.decode()
    assert "Try again in 15 minutes" in response.content.decode()
    assert response["X-Frame-Options"] == "DENY"


@pytest.mark.parametrize("path", LOGIN_PAGES)
def test_one_address_guessing_many_usernames_is_locked_out(path, staff):
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        fail(path, 1, username=f"guess{n}", ip="198.51.100.1")

    assert sign_in(path, "alice", "password", ip="198.51.100.1").status_code == 429
    assert signed_in(sign_in(path, "alice", "password", ip="198.51.100.2"))


def test_a_lockout_does_not_reveal_whether_the_username_exists(staff):
    fail(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT, username="alice", ip="198.51.100.1")
    fail(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT, username="nobody", ip="198.51.100.2")

    existing = sign_in(CLI_LOGIN, "alice", "wrong", ip="198.51.100.1")
    unknown = sign_in(CLI_LOGIN, "nobody", "wrong", ip="198.51.100.2")

    assert existing.status_code == unknown.status_code == 429
    assert without_nonce(existing) == without_nonce(unknown)
    assert existing["Retry-After"] == unknown["Retry-After"]


def test_the_failure_counters_are_shared_by_both_pages(staff):
    fail(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT)

    assert sign_in(ADMIN_LOGIN, "alice", "password").status_code == 429


def test_a_username_that_spells_an_address_does_not_count_against_that_address(staff):
    victim_ip = "198.51.100.50"
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        fail(CLI_LOGIN, 1, username=victim_ip, ip=f"203.0.113.{n + 1}")

    assert signed_in(sign_in(CLI_LOGIN, "alice", "password", ip=victim_ip))


@override_settings(REST_FRAMEWORK={**settings.REST_FRAMEWORK, "NUM_PROXIES": 1})
def test_behind_a_proxy_each_client_has_its_own_address_limit(staff):
    def via_proxy(client_ip: str, forged: str) -> dict:
        return {"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": f"{forged}, {client_ip}"}

    for n in range(settings.LOGIN_FAILURE_LIMIT):
        # a new forged address and username each time: the client's own address is counted
        Client().post(
            CLI_LOGIN,
            {"username": f"guess{n}", "password": "wrong"},
            **via_proxy("198.51.100.1", f"203.0.113.{n + 1}"),
        )

    locked = Client().post(
        CLI_LOGIN,
        {"username": "alice", "password": "password"},
        **via_proxy("198.51.100.1", "203.0.113.200"),
    )
    other_client = Client().post(
        CLI_LOGIN,
        {"username": "alice", "password": "password"},
        **via_proxy("198.51.100.2", "203.0.113.200"),
    )
    assert locked.status_code == 429
    assert signed_in(other_client)


def test_the_lockout_ends_after_the_cool_off(staff):
    with override_settings(AXES_COOLOFF_TIME=timedelta(seconds=1)):
        fail(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT)
        locked = sign_in(CLI_LOGIN, "alice", "password")
        assert locked.status_code == 429
        assert locked["Retry-After"] == "1"
        assert "Try again in 1 minute." in locked.content.decode()

        time.sleep(1.5)

        assert signed_in(sign_in(CLI_LOGIN, "alice", "password"))


@pytest.mark.parametrize("path", LOGIN_PAGES)
@pytest.mark.parametrize("password", ["password", "wrong"])
def test_with_the_counters_cache_down_a_sign_in_is_refused_with_503(path, password, staff, caplog):
    from tests.outages import dead_redis_caches

    # django-axes keeps the cache its handler was made with: naming AXES_HANDLER makes a new
    # one, on the dead cache here and on the live one again afterwards.
    with override_settings(CACHES=dead_redis_caches(), AXES_HANDLER=settings.AXES_HANDLER):
        response = sign_in(path, "alice", password)

    # fails closed: the right password does not sign in without its limits, and says why
    assert response.status_code == 503
    assert response["Retry-After"] == "30"
    assert "Sign-in is temporarily unavailable" in response.content.decode()
    assert response["X-Frame-Options"] == "DENY"
    assert "sessionid" not in response.cookies
    assert any("sign-in limits' cache is unavailable" in r.getMessage() for r in caplog.records)
    # and once Redis is back, the same sign-in works
    if password == "password":
        assert signed_in(sign_in(path, "alice", "password"))
