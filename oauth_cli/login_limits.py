"""django-axes hooks of the sign-in limits (settings in config/settings/logins.py), and the
"known browser" cookie that keeps a stranger's failed guesses from locking an account's owner
out.

A failed sign-in is counted per client address and per username; at LOGIN_FAILURE_LIMIT
failures either counter refuses further sign-ins, right passwords included. A browser that has
signed in as a username before (it holds a mark of that account in the signed `known_browser`
cookie) is counted and limited apart: only in a per-username counter of its own, which the
account's known browsers share. Guesses from anywhere else, however many, leave it untouched;
guesses with a stolen cookie are still limited, per username, across every address.
"""

import logging

import redis
from axes.models import AccessBase
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in
from django.core import signing
from django.core.exceptions import ObjectDoesNotExist
from django.dispatch import receiver
from django.urls import reverse
from django.utils.crypto import salted_hmac

from oauth_cli.views import protected_page

logger = logging.getLogger(__name__)

USERNAME_KEY_PREFIX = "username:"
KNOWN_BROWSER_USERNAME_KEY_PREFIX = "known-browser-username:"
KNOWN_BROWSER_COOKIE = "known_browser"
KNOWN_BROWSER_SALT = "oauth_cli.login_limits.known_browser"
# Accounts one browser is known for (most recent sign-in first); a shared computer's oldest
# account drops off.
KNOWN_BROWSER_ACCOUNTS = 5


def username_key(request, credentials: dict | None) -> str | None:
    """The per-username counter's key: the submitted username, marked as one, and marked apart
    when this browser is known for it (AXES_USERNAME_CALLABLE).

    django-axes hashes each counter's bare value, so without the mark a failed sign-in as
    username "203.0.113.7" would count against the client address 203.0.113.7.
    """
    username = _submitted_username(request, credentials)
    if username is None:
        return None
    if is_known_browser(request, username):
        return f"{KNOWN_BROWSER_USERNAME_KEY_PREFIX}{username}"
    return f"{USERNAME_KEY_PREFIX}{username}"


def lockout_parameters(request_or_attempt, credentials: dict | None = None) -> list:
    """The counters a sign-in is counted in and refused by (AXES_LOCKOUT_PARAMETERS).

    An unknown browser: its address, and the username. A known browser: the username only
    (username_key gives it the known browsers' own counter), so neither a stranger's guesses
    at the username nor failures of others at the same address lock it out.
    """
    if not isinstance(request_or_attempt, AccessBase):
        username = _submitted_username(request_or_attempt, credentials)
        if username is not None and is_known_browser(request_or_attempt, username):
            return ["username"]
    return ["ip_address", "username"]


def is_known_browser(request, username: str) -> bool:
    """This browser signed in as `username`, with the account's current password, within
    LOGIN_KNOWN_BROWSER_DAYS of its last sign-in. Decided once per request, so the check before
    the password and the count after it agree (a sign-in can rehash the password)."""
    decided = request.__dict__.setdefault("_known_browser_for", {})
    if username not in decided:
        decided[username] = _holds_mark_of(request, username)
    return decided[username]


def _holds_mark_of(request, username: str) -> bool:
    marks = known_browser_marks(request)
    if not marks or "\x00" in username:  # PostgreSQL text cannot hold NUL
        return False
    try:
        user = get_user_model()._default_manager.get_by_natural_key(username)
    except ObjectDoesNotExist:
        return False
    return account_mark(user) in marks


def account_mark(user) -> str:
    """What the cookie holds for an account: keyed with SECRET_KEY (unforgeable, and it names
    no username), and bound to the password hash, so a password change forgets every browser."""
    value = f"{user.pk}:{user.get_username()}:{user.password}"
    return salted_hmac(KNOWN_BROWSER_SALT, value, algorithm="sha256").hexdigest()[:32]


def known_browser_marks(request) -> list[str]:
    """The account marks of a valid, unexpired `known_browser` cookie; none for anything else."""
    value = request.COOKIES.get(KNOWN_BROWSER_COOKIE)
    if not value:
        return []
    try:
        marks = signing.loads(
            value, salt=KNOWN_BROWSER_SALT, max_age=settings.LOGIN_KNOWN_BROWSER_DAYS * 86400
        )
    except signing.BadSignature:  # also an expired one
        return []
    if not isinstance(marks, list):
        return []
    return [mark for mark in marks if isinstance(mark, str)]


def _submitted_username(request, credentials: dict | None) -> str | None:
    if credentials is not None and "username" in credentials:
        return credentials["username"]
    return getattr(request, "POST", {}).get("username")


@receiver(user_logged_in)
def remember_signed_in_browser(sender, request, user, **kwargs):
    """A sign-in (on either page) makes the browser known for the account; the middleware below
    writes the cookie on the response."""
    if request is not None:
        request.known_browser_mark = account_mark(user)


class KnownBrowserCookieMiddleware:
    """Sets the `known_browser` cookie on the response to a successful sign-in: this account's
    mark first, then the browser's other accounts, signed with the time of this sign-in."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        mark = getattr(request, "known_browser_mark", None)
        if mark is None:
            return response
        others = [other for other in known_browser_marks(request) if other != mark]
        marks = [mark, *others][:KNOWN_BROWSER_ACCOUNTS]
        response.set_cookie(
            KNOWN_BROWSER_COOKIE,
            signing.dumps(marks, salt=KNOWN_BROWSER_SALT),
            max_age=settings.LOGIN_KNOWN_BROWSER_DAYS * 86400,
            secure=settings.SESSION_COOKIE_SECURE,
            httponly=True,
            samesite="Lax",
        )
        return response


class SignInLimitsUnavailableMiddleware:
    """A sign-in while the failure counters' cache (Redis) cannot be reached is answered with
    a 503 page and logged, instead of a 500. It fails closed, unlike the API's rate limiter:
    these counters are what stands between a password and unlimited guessing, and a sign-in
    can wait for Redis where an API integration should not."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(
            exception, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError
        ):
            return None
        if request.path not in (settings.LOGIN_URL, reverse("admin:login")):
            return None
        logger.error("sign-in refused: the sign-in limits' cache is unavailable", exc_info=True)
        return protected_page(
            request, "registration/signin_unavailable.html", status=503, retry_after=30
        )
