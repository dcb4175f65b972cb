"""How an owner gets back in while strangers keep failing at her username:
the browser that changes the password stays known (and its address), and staff can clear the
username's lock from the admin."""

import io

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client

from tests.admin_users import post_action, staff_client_with
from tests.factories import UserFactory
from tests.oauth_cli.login import (
    ATTACKER_IP,
    CLI_LOGIN,
    KNOWN_BROWSER_COOKIE,
    NEW_ADDRESS,
    OWNER_IP,
    attack,
    browser_signed_in_before,
    browser_with_cookie,
    sign_in,
    sign_in_from,
    signed_in,
)

NEW_PASSWORD = "a-new-long-password-23"
USERS = "/admin/accounts/user/"


@pytest.fixture
def alice(db):
    return UserFactory(username="alice", is_staff=True, is_superuser=True)


def change_password(browser: Client, page: str, user, ip: str = OWNER_IP):
    """The admin's own password change page, or the user admin's password page for oneself."""
    if page == "own":
        return browser.post(
            "/admin/password_change/",
            {
                "old_password": "password",
                "new_password1": NEW_PASSWORD,
                "new_password2": NEW_PASSWORD,
            },
            REMOTE_ADDR=ip,
        )
    return browser.post(
        f"{USERS}{user.pk}/password/",
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
        REMOTE_ADDR=ip,
    )


def signed_in_browser(ip: str = OWNER_IP) -> Client:
    browser = Client()
    assert signed_in(sign_in_from(browser, CLI_LOGIN, "alice", "password", ip=ip))
    return browser


@pytest.mark.parametrize("page", ["own", "user admin"])
def test_the_browser_that_changed_the_password_stays_known(page, alice):
    # given: alice changes her password in her browser
    browser = signed_in_browser()
    changed = change_password(browser, page, alice)
    assert changed.status_code == 302
    assert KNOWN_BROWSER_COOKIE in changed.cookies
    del browser.cookies[settings.SESSION_COOKIE_NAME]

    # when: strangers fail at her username past the limit
    attack(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT + 2)

    # then: that browser signs her in with the new password, even from a new network
    assert signed_in(sign_in_from(browser, CLI_LOGIN, "alice", NEW_PASSWORD, ip=NEW_ADDRESS))


def test_the_address_the_password_was_changed_from_stays_known(alice):
    change_password(signed_in_browser(), "own", alice)
    attack(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT)

    # another browser (no cookie) at that address: the username's lock does not hold it up
    assert signed_in(sign_in(CLI_LOGIN, "alice", NEW_PASSWORD, ip=OWNER_IP))


def test_a_password_change_still_forgets_the_other_browsers(alice):
    other_browser = browser_signed_in_before(CLI_LOGIN, ip="192.0.2.60")
    change_password(signed_in_browser(), "own", alice)
    attack(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT)

    refused = sign_in_from(other_browser, CLI_LOGIN, "alice", NEW_PASSWORD, ip="192.0.2.60")

    assert refused.status_code == 429


def test_a_failed_password_change_does_not_set_the_cookie(alice):
    browser = signed_in_browser()
    del browser.cookies[KNOWN_BROWSER_COOKIE]

    response = browser.post(
        "/admin/password_change/",
        {"old_password": "wrong", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
        REMOTE_ADDR=OWNER_IP,
    )

    assert response.status_code == 200
    assert KNOWN_BROWSER_COOKIE not in response.cookies


# Staff clear a username's lock from the user admin.


def clear_locks(client: Client, *users):
    return post_action(client, USERS, "clear_sign_in_locks", [user.pk for user in users])


def test_staff_clear_a_usernames_lock_and_a_new_browser_signs_in(alice):
    # given: alice's username is locked for new browsers, and bob's too
    UserFactory(username="bob")
    attack(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT)
    attack(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT, username="bob", ip="203.0.113.67")
    assert sign_in(CLI_LOGIN, "alice", "password", ip=NEW_ADDRESS).status_code == 429

    # when: staff who may change users clear alice's lock
    response = clear_locks(staff_client_with("accounts.view_user", "accounts.change_user"), alice)

    # then: a new browser signs her in; bob, not selected, is still locked
    assert response.status_code == 302
    assert signed_in(sign_in(CLI_LOGIN, "alice", "password", ip=NEW_ADDRESS))
    assert sign_in(CLI_LOGIN, "bob", "password", ip=NEW_ADDRESS).status_code == 429
    # the attacker's address keeps its own lock: clearing a username is not an amnesty
    assert sign_in(CLI_LOGIN, "alice", "password", ip=ATTACKER_IP).status_code == 429


def test_staff_clear_the_known_browsers_lock_too(alice):
    # given: guesses with a copy of alice's cookie locked her known browsers
    stolen = browser_signed_in_before(CLI_LOGIN).cookies[KNOWN_BROWSER_COOKIE].value
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        sign_in_from(browser_with_cookie(stolen), CLI_LOGIN, "alice", "wrong", f"203.0.113.{n}")
    owner = browser_with_cookie(stolen)
    assert sign_in_from(owner, CLI_LOGIN, "alice", "password", ip=OWNER_IP).status_code == 429

    clear_locks(staff_client_with("accounts.view_user", "accounts.change_user"), alice)

    assert signed_in(sign_in_from(owner, CLI_LOGIN, "alice", "password", ip=OWNER_IP))


def test_view_only_staff_cannot_clear_a_lock(alice):
    attack(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT)

    clear_locks(staff_client_with("accounts.view_user"), alice)

    assert sign_in(CLI_LOGIN, "alice", "password", ip=NEW_ADDRESS).status_code == 429


@pytest.mark.parametrize(
    ("address", "key"),
    [("198.51.100.70", "198.51.100.70"), ("2001:db8:7:8::1", "2001:db8:7:8::/64")],
)
def test_an_addresss_lock_is_cleared_with_axes_reset_ip_and_its_key(address, key, alice):
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        sign_in(CLI_LOGIN, f"guess{n}", "wrong", ip=address)
    assert sign_in(CLI_LOGIN, "alice", "password", ip=address).status_code == 429

    call_command("axes_reset_ip", key, stdout=io.StringIO())

    assert signed_in(sign_in(CLI_LOGIN, "alice", "password", ip=address))


def test_the_lockout_page_says_how_an_owner_gets_back_in(alice):
    attack(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT)

    page = sign_in(CLI_LOGIN, "alice", "password", ip=NEW_ADDRESS).content.decode()

    assert "administrator can lift the pause" in page
