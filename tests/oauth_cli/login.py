"""Sign-ins of the login-limit tests: the two sign-in pages, a stranger guessing, a browser known
from an earlier sign-in, the addresses they come from."""

from django.conf import settings
from django.test import Client

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


KNOWN_BROWSER_COOKIE = "known_browser"
KNOWN_BROWSER_SALT = "oauth_cli.login_limits.known_browser"
OWNER_IP = "198.51.100.7"
NEW_ADDRESS = "192.0.2.44"
ATTACKER_IP = "203.0.113.66"


def browser_signed_in_before(path: str, ip: str = OWNER_IP, username: str = "alice") -> Client:
    """A browser in which `username` signed in earlier, its session since ended."""
    browser = Client()
    assert signed_in(sign_in_from(browser, path, username, "password", ip=ip))
    del browser.cookies[settings.SESSION_COOKIE_NAME]
    return browser


def sign_in_from(browser: Client, path: str, username: str, password: str, ip: str):
    return browser.post(path, {"username": username, "password": password}, REMOTE_ADDR=ip)


def browser_with_cookie(value: str) -> Client:
    browser = Client()
    browser.cookies[KNOWN_BROWSER_COOKIE] = value
    return browser


def attack(path: str, times: int, *, ip: str = ATTACKER_IP, username: str = "alice"):
    fail(path, times, username=username, ip=ip)
