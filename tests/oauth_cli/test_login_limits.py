"""Password guessing on both sign-in pages (the CLI's /accounts/login/ and the admin's) is
limited per client address (IPv6: per network) and per username, with one answer that reveals
no username; a browser that has signed in as a username before is not locked out by strangers'
failures at it."""

import re
import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.core import signing
from django.test import Client, override_settings

from tests.factories import UserFactory
from tests.oauth_cli.flow import via_proxy
from tests.oauth_cli.login import (
    ADMIN_LOGIN,
    ATTACKER_IP,
    CLI_LOGIN,
    KNOWN_BROWSER_COOKIE,
    KNOWN_BROWSER_SALT,
    LOGIN_PAGES,
    NEW_ADDRESS,
    OWNER_IP,
    attack,
    browser_signed_in_before,
    browser_with_cookie,
    fail,
    sign_in,
    sign_in_from,
    signed_in,
)
from tests.servers import wait_for


def without_nonce(response) -> str:
    return re.sub(r'nonce="[^"]*"', "", response.content.decode())


@pytest.fixture
def staff(db):
    return UserFactory(username="alice", is_staff=True, is_superuser=True)


def test_by_default_the_tenth_failure_locks_the_username_out_for_15_minutes(staff):
    for _ in range(9):
        assert sign_in(CLI_LOGIN, "alice", "wrong").status_code == 200

    locked = sign_in(CLI_LOGIN, "alice", "wrong")

    assert locked.status_code == 429
    assert locked["Retry-After"] == str(15 * 60)
    assert "Try again in 15 minutes." in locked.content.decode()


@pytest.mark.parametrize("path", LOGIN_PAGES)
def test_below_the_limit_a_failure_is_a_form_error_and_the_right_password_signs_in(path, staff):
    for _ in range(settings.LOGIN_FAILURE_LIMIT - 1):
        response = sign_in(path, "alice", "wrong")
        assert response.status_code == 200
        assert response.context["form"].non_field_errors()

    assert signed_in(sign_in(path, "alice", "password"))


@pytest.mark.parametrize("path", LOGIN_PAGES)
def test_after_a_usernames_limit_a_new_browser_is_refused_even_the_right_password(path, staff):
    # given: ten wrong passwords for alice, each from another address
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        fail(path, 1, ip=f"203.0.113.{n + 1}")

    # when: the right one, from an address that never failed, in a browser that never signed in
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


def test_the_lockout_ends_after_the_cool_off(staff, cache_keys):
    with override_settings(AXES_COOLOFF_TIME=timedelta(seconds=1)):
        fail(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT)
        locked = sign_in(CLI_LOGIN, "alice", "password")
        assert locked.status_code == 429
        assert locked["Retry-After"] == "1"
        assert "Try again in 1 minute." in locked.content.decode()

        # the failure counters expire after the cool-off (their Redis TTL): waited for, not slept
        wait_for(lambda: not cache_keys("axes-*"), timeout=10, what="the failure counters expired")

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


@pytest.mark.parametrize("path", LOGIN_PAGES)
def test_with_the_counters_cache_down_the_sign_in_page_itself_is_the_503_page(path, staff):
    from tests.outages import dead_redis_caches

    with override_settings(CACHES=dead_redis_caches()):
        page = Client().get(path)

    # nobody types a password into a form that cannot be submitted
    assert page.status_code == 503
    assert page["Retry-After"] == "30"
    assert "Sign-in is temporarily unavailable" in page.content.decode()
    assert 'name="password"' not in page.content.decode()
    # and once Redis is back, the form
    assert Client().get(path).status_code == 200


# Known browsers: a stranger's failures at a username do not lock its owner out.


@pytest.mark.parametrize("path", LOGIN_PAGES)
def test_a_strangers_failures_do_not_lock_the_owner_out_of_their_own_browser(path, staff):
    # given: alice (a superuser) signed in from her browser before
    owner = browser_signed_in_before(path)

    # when: someone elsewhere fails at her username past the limit
    attack(path, settings.LOGIN_FAILURE_LIMIT + 2)

    # then: her browser signs in with her password, from her address or from a new one
    assert signed_in(sign_in_from(owner, path, "alice", "password", ip=OWNER_IP))
    del owner.cookies[settings.SESSION_COOKIE_NAME]
    assert signed_in(sign_in_from(owner, path, "alice", "password", ip="192.0.2.40"))


@pytest.mark.parametrize("path", LOGIN_PAGES)
def test_the_attackers_address_is_locked_and_new_browsers_are_refused_the_username(path, staff):
    UserFactory(username="bob", is_staff=True)
    browser_signed_in_before(path)
    attack(path, settings.LOGIN_FAILURE_LIMIT)

    # the attacker's address: refused for alice, right password included, and for anyone else
    assert sign_in(path, "alice", "password", ip=ATTACKER_IP).status_code == 429
    assert sign_in(path, "bob", "password", ip=ATTACKER_IP).status_code == 429
    # a browser that never signed in as alice: refused her username only, with Retry-After
    refused = sign_in(path, "alice", "password", ip="192.0.2.41")
    assert refused.status_code == 429
    assert refused["Retry-After"] == str(settings.LOGIN_LOCKOUT_MINUTES * 60)
    assert signed_in(sign_in(path, "bob", "password", ip="192.0.2.41"))


def test_an_attacker_sharing_the_owners_ipv6_64_locks_it_for_everyone_but_her_browser(staff):
    owner = browser_signed_in_before(CLI_LOGIN, ip="2001:db8:1:2::7")
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        fail(CLI_LOGIN, 1, username=f"guess{n}", ip="2001:db8:1:2::66")

    assert sign_in(CLI_LOGIN, "alice", "password", ip="2001:db8:1:2::8").status_code == 429
    assert signed_in(sign_in_from(owner, CLI_LOGIN, "alice", "password", ip="2001:db8:1:2::7"))


def test_the_owners_own_typos_in_her_browser_are_counted_apart_from_the_strangers(staff):
    owner = browser_signed_in_before(CLI_LOGIN)
    attack(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT)

    for _ in range(settings.LOGIN_FAILURE_LIMIT - 1):
        assert sign_in_from(owner, CLI_LOGIN, "alice", "wrong", ip=OWNER_IP).status_code == 200
    assert signed_in(sign_in_from(owner, CLI_LOGIN, "alice", "password", ip=OWNER_IP))


def test_guessing_with_a_known_browsers_cookie_is_limited_per_username_across_addresses(staff):
    # given: a copy of alice's browser cookie, used from ten addresses
    stolen = browser_signed_in_before(CLI_LOGIN).cookies[KNOWN_BROWSER_COOKIE].value
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        response = sign_in_from(
            browser_with_cookie(stolen), CLI_LOGIN, "alice", "wrong", ip=f"203.0.113.{n + 1}"
        )
        assert response.status_code in (200, 429)

    # then: a browser with that cookie is refused alice, from any address ...
    thief = browser_with_cookie(stolen)
    assert sign_in_from(thief, CLI_LOGIN, "alice", "password", ip="192.0.2.42").status_code == 429
    # ... while a new browser, counted apart, still signs her in
    assert signed_in(sign_in(CLI_LOGIN, "alice", "password", ip="192.0.2.43"))


def test_a_browser_is_known_only_for_the_accounts_that_signed_in_there(staff):
    UserFactory(username="bob")
    bobs_browser = browser_signed_in_before(CLI_LOGIN, username="bob")
    attack(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT)

    response = sign_in_from(bobs_browser, CLI_LOGIN, "alice", "password", ip=OWNER_IP)

    assert response.status_code == 429


# A known browser is remembered 90 days by default (LOGIN_KNOWN_BROWSER_DAYS): the test below
# pins what that default does, a cookie one day younger still counting.
KNOWN_BROWSER_DAYS = 90


def signed_long_ago(marks: list, days: int) -> str:
    class SignedLongAgo(signing.TimestampSigner):
        def timestamp(self):
            return signing.b62_encode(int(time.time()) - days * 86400 - 60)

    return SignedLongAgo(salt=KNOWN_BROWSER_SALT).sign_object(marks)


@pytest.mark.parametrize("cookie", ["tampered", "another key", "expired"])
def test_a_cookie_the_server_did_not_sign_or_that_expired_does_not_count(cookie, staff):
    genuine = browser_signed_in_before(CLI_LOGIN).cookies[KNOWN_BROWSER_COOKIE].value
    marks = signing.loads(genuine, salt=KNOWN_BROWSER_SALT)
    value = {
        "tampered": genuine[:-1] + ("A" if genuine[-1] != "A" else "B"),
        "another key": signing.dumps(marks, key="k" * 50, salt=KNOWN_BROWSER_SALT),
        "expired": signed_long_ago(marks, days=KNOWN_BROWSER_DAYS),
    }[cookie]
    # the unexpired copy made the same way is still known: the test changes one thing only
    assert signed_in(
        sign_in_from(
            browser_with_cookie(signed_long_ago(marks, days=KNOWN_BROWSER_DAYS - 1)),
            CLI_LOGIN,
            "alice",
            "password",
            ip="192.0.2.45",
        )
    )
    attack(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT)

    # from an address alice never signed in from: there only the cookie could make her known
    response = sign_in_from(browser_with_cookie(value), CLI_LOGIN, "alice", "password", NEW_ADDRESS)

    assert response.status_code == 429


def test_a_password_change_forgets_the_browsers_that_signed_in_with_the_old_one(staff):
    owner = browser_signed_in_before(CLI_LOGIN)
    staff.set_password("new password")
    staff.save()
    attack(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT)

    response = sign_in_from(owner, CLI_LOGIN, "alice", "new password", ip=OWNER_IP)

    assert response.status_code == 429


@pytest.mark.parametrize("path", LOGIN_PAGES)
def test_a_sign_in_sets_the_known_browser_cookie_for_90_days_http_only(path, staff):
    with override_settings(SESSION_COOKIE_SECURE=True):
        response = sign_in(path, "alice", "password")

    cookie = response.cookies[KNOWN_BROWSER_COOKIE]
    assert cookie["max-age"] == 90 * 86400
    assert cookie["httponly"] and cookie["secure"]
    assert cookie["samesite"] == "Lax"
    assert "alice" not in signing.loads(cookie.value, salt=KNOWN_BROWSER_SALT)[0]
    assert sign_in(path, "alice", "wrong").cookies.get(KNOWN_BROWSER_COOKIE) is None


def test_a_browser_stays_known_for_its_other_accounts(staff):
    UserFactory(username="bob")
    browser = browser_signed_in_before(CLI_LOGIN)
    sign_in_from(browser, CLI_LOGIN, "bob", "password", ip=OWNER_IP)
    attack(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT)

    assert signed_in(sign_in_from(browser, CLI_LOGIN, "alice", "password", ip=OWNER_IP))


# IPv6: one client holds a whole /64 (CLIENT_IPV6_PREFIX_LENGTH), and is counted as one.


@pytest.mark.parametrize("path", LOGIN_PAGES)
def test_failures_from_addresses_of_one_ipv6_64_lock_that_network_only(path, staff):
    for n in range(settings.LOGIN_FAILURE_LIMIT + 2):
        fail(path, 1, username=f"guess{n}", ip=f"2001:db8:1:2::{n + 1:x}")

    assert (
        sign_in(path, "alice", "password", ip="2001:db8:1:2:ffff:ffff:ffff:ffff").status_code == 429
    )
    assert signed_in(sign_in(path, "alice", "password", ip="2001:db8:1:3::1"))


@override_settings(REST_FRAMEWORK={**settings.REST_FRAMEWORK, "NUM_PROXIES": 1})
def test_behind_a_proxy_an_ipv6_client_is_counted_by_its_64(staff):
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        Client().post(
            CLI_LOGIN,
            {"username": f"guess{n}", "password": "wrong"},
            **via_proxy(f"2001:db8:1:2:{n + 1:x}::1", f"2001:db8:9:{n + 1:x}::1"),
        )

    def attempt(client_ip):
        return Client().post(
            CLI_LOGIN,
            {"username": "alice", "password": "password"},
            **via_proxy(client_ip, "2001:db8:9::1"),
        )

    assert attempt("2001:db8:1:2::abcd").status_code == 429
    assert signed_in(attempt("2001:db8:1:3::abcd"))


def test_an_ipv4_mapped_address_is_counted_as_its_ipv4_address(staff):
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        fail(CLI_LOGIN, 1, username=f"guess{n}", ip="::ffff:198.51.100.1")

    assert sign_in(CLI_LOGIN, "alice", "password", ip="198.51.100.1").status_code == 429
    # and not as the IPv6 network all mapped addresses share
    assert signed_in(sign_in(CLI_LOGIN, "alice", "password", ip="::ffff:198.51.100.2"))


@override_settings(CLIENT_IPV6_PREFIX_LENGTH=48)
def test_the_ipv6_network_size_is_configurable(staff):
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        fail(CLI_LOGIN, 1, username=f"guess{n}", ip=f"2001:db8:1:{n + 1:x}::1")

    assert sign_in(CLI_LOGIN, "alice", "password", ip="2001:db8:1:ffff::1").status_code == 429
    assert signed_in(sign_in(CLI_LOGIN, "alice", "password", ip="2001:db8:2::1"))


# Known addresses: where the account signed in before, without the cookie (another browser).


@pytest.mark.parametrize("path", LOGIN_PAGES)
def test_a_correct_password_from_a_known_address_passes_a_strangers_lock_on_the_username(
    path, staff
):
    # given: alice signed in from her address before, then strangers elsewhere fail at her
    # username past the limit
    browser_signed_in_before(path)
    attack(path, settings.LOGIN_FAILURE_LIMIT + 2)

    # then: from her address, a browser without the cookie signs her in with her password ...
    assert signed_in(sign_in(path, "alice", "password", ip=OWNER_IP))
    # ... and a wrong password there is a form error, not a lockout
    assert sign_in(path, "alice", "wrong", ip=OWNER_IP).status_code == 200
    # while an unknown address with no cookie is refused her username
    assert sign_in(path, "alice", "password", ip=NEW_ADDRESS).status_code == 429


def test_a_known_address_still_has_its_own_lock(staff):
    browser_signed_in_before(CLI_LOGIN)

    fail(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT, ip=OWNER_IP)

    assert sign_in(CLI_LOGIN, "alice", "password", ip=OWNER_IP).status_code == 429


def test_an_address_is_known_only_for_the_accounts_that_signed_in_from_it(staff):
    UserFactory(username="bob")
    browser_signed_in_before(CLI_LOGIN, username="bob")
    attack(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT)

    assert sign_in(CLI_LOGIN, "alice", "password", ip=OWNER_IP).status_code == 429
    assert signed_in(sign_in(CLI_LOGIN, "bob", "password", ip=OWNER_IP))


def test_an_ipv6_address_is_known_as_its_network(staff):
    browser_signed_in_before(CLI_LOGIN, ip="2001:db8:4:5::1")
    attack(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT)

    assert signed_in(sign_in(CLI_LOGIN, "alice", "password", ip="2001:db8:4:5::99"))
    assert sign_in(CLI_LOGIN, "alice", "password", ip="2001:db8:4:6::1").status_code == 429


def test_a_password_change_forgets_the_addresses_it_signed_in_from(staff):
    browser_signed_in_before(CLI_LOGIN)
    staff.set_password("new password")
    staff.save()
    attack(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT)

    assert sign_in(CLI_LOGIN, "alice", "new password", ip=OWNER_IP).status_code == 429


def test_the_cache_holds_neither_the_username_nor_the_address(staff):
    from django.core.cache import cache

    browser_signed_in_before(CLI_LOGIN)

    keys = [key.decode() for key in cache._cache.get_client().keys("*known-address*")]
    assert len(keys) == 1
    assert "alice" not in keys[0] and OWNER_IP not in keys[0]
