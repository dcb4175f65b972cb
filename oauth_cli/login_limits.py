"""django-axes hooks of the sign-in limits (settings: config/settings/logins.py), and the known
browsers and addresses that keep strangers' failed guesses from locking an account's owner out
(docs/decisions/hardening.md, "Hardening II: sign-in limits and IPv6 buckets").

Which counters a failed sign-in is counted in and refused by, at LOGIN_FAILURE_LIMIT failures:
an unknown client, its address's and the username's; a browser known for the username (the
signed `known_browser` cookie holds the account's mark), only the known browsers' own
per-username counter; a known address (IPv6: network) without the cookie, only its address's.
The marks and address keys made with a SECRET_KEY_FALLBACKS key are still recognised.
"""

import functools
import logging

import redis
from axes.models import AccessBase
from axes.signals import user_locked_out
from axes.utils import reset as axes_reset
from django.conf import settings
from django.contrib.auth import HASH_SESSION_KEY, get_user, get_user_model
from django.contrib.auth.signals import user_logged_in
from django.core import signing
from django.core.cache import cache
from django.core.exceptions import ObjectDoesNotExist
from django.dispatch import receiver
from django.urls import reverse
from django.utils.crypto import salted_hmac
from django.utils.deprecation import MiddlewareMixin

from core.api.client_address import UNKNOWN_CLIENT_ADDRESS, client_address_key
from core.operations import metrics
from oauth_cli.views import protected_page

logger = logging.getLogger(__name__)

USERNAME_KEY_PREFIX = "username:"
KNOWN_BROWSER_USERNAME_KEY_PREFIX = "known-browser-username:"
KNOWN_BROWSER_COOKIE = "known_browser"
KNOWN_BROWSER_SALT = "oauth_cli.login_limits.known_browser"
KNOWN_ADDRESS_SALT = "oauth_cli.login_limits.known_address"
# Accounts one browser is known for (most recent first); a shared computer's oldest drops off.
KNOWN_BROWSER_ACCOUNTS = 5
KNOWN_BROWSER, KNOWN_ADDRESS = "known browser", "known address"
CACHE_UNAVAILABLE = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


def username_key(request, credentials: dict | None) -> str | None:
    """The per-username counter's key: the submitted username, marked as one, and marked apart
    when this browser is known for it (AXES_USERNAME_CALLABLE).

    django-axes hashes each counter's bare value, so without the mark a failed sign-in as
    username "203.0.113.7" would count against the client address 203.0.113.7.
    """
    username = _submitted_username(request, credentials)
    if username is None:
        return None
    if sign_in_lane(request, username) == KNOWN_BROWSER:
        return f"{KNOWN_BROWSER_USERNAME_KEY_PREFIX}{username}"
    return f"{USERNAME_KEY_PREFIX}{username}"


def lockout_parameters(request_or_attempt, credentials: dict | None = None) -> list:
    """The counters a sign-in is counted in and refused by (AXES_LOCKOUT_PARAMETERS), by lane
    (module docstring); username_key gives a known browser the known browsers' own counter."""
    if not isinstance(request_or_attempt, AccessBase):
        username = _submitted_username(request_or_attempt, credentials)
        lane = None if username is None else sign_in_lane(request_or_attempt, username)
        if lane == KNOWN_BROWSER:
            return ["username"]
        if lane == KNOWN_ADDRESS:
            return ["ip_address"]
    return ["ip_address", "username"]


def sign_in_lane(request, username: str) -> str | None:
    """KNOWN_BROWSER: this browser signed in as `username` (the cookie holds the account's mark);
    KNOWN_ADDRESS: the account signed in from this client address (IPv6: network); None:
    neither. Both with the account's current password, within LOGIN_KNOWN_BROWSER_DAYS of that
    sign-in. Decided once per request (one account lookup), so the check before the password
    and the count after it agree (a sign-in can rehash the password)."""
    decided = request.__dict__.setdefault("_sign_in_lane_for", {})
    if username not in decided:
        decided[username] = _lane(request, _account(username))
    return decided[username]


def _lane(request, user) -> str | None:
    if user is None:
        return None
    cookie_marks = known_browser_marks(request)
    if any(mark in cookie_marks for mark in account_marks(user)):
        return KNOWN_BROWSER
    address = client_address_key(request)
    if address != UNKNOWN_CLIENT_ADDRESS and any(
        cache.get_many(known_address_keys(user, address)).values()
    ):
        return KNOWN_ADDRESS
    return None


def _signing_keys() -> list[str]:
    """SECRET_KEY first (what is made now), then the keys being rotated out."""
    return [settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS]


def known_address_keys(user, address: str) -> list[str]:
    """The cache keys that remember an (account, address) sign-in, the one made now first:
    keyed with SECRET_KEY, so the cache holds neither the username nor the address, and bound
    to the password hash."""
    return [
        f"login:known-address:{_keyed_digest(KNOWN_ADDRESS_SALT, user, address, secret=key)}"
        for key in _signing_keys()
    ]


def _account(username: str):
    if "\x00" in username:  # PostgreSQL text cannot hold NUL
        return None
    try:
        return get_user_model()._default_manager.get_by_natural_key(username)
    except ObjectDoesNotExist:
        return None


def account_marks(user) -> list[str]:
    """What the cookie holds for an account, the mark made now first: keyed with SECRET_KEY
    (unforgeable, and it names no username), and bound to the password hash, so a password
    change forgets every browser but the one that made it (KnownBrowserCookieMiddleware gives
    that one the new mark)."""
    return [_keyed_digest(KNOWN_BROWSER_SALT, user, secret=key) for key in _signing_keys()]


def _keyed_digest(salt: str, user, *extra: str, secret: str) -> str:
    value = ":".join([str(user.pk), user.get_username(), user.password, *extra])
    return salted_hmac(salt, value, secret=secret, algorithm="sha256").hexdigest()[:32]


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
    return marks if isinstance(marks, list) else []


def _submitted_username(request, credentials: dict | None) -> str | None:
    if credentials is not None and "username" in credentials:
        return credentials["username"]
    return getattr(request, "POST", {}).get("username")


@receiver(user_logged_in)
def remember_signed_in_browser(sender, request, user, **kwargs):
    """A sign-in (on either page) makes the browser and its address known for the account; the
    middleware below writes the cookie on the response."""
    if request is None:
        return
    request.known_browser_account_marks = account_marks(user)
    address = client_address_key(request)
    if address == UNKNOWN_CLIENT_ADDRESS:  # force_login's bare request, say
        return
    # Best effort: the sign-in has succeeded; a cache that fails now costs only the address's
    # standing (logged), not the sign-in.
    try:
        cache.set(
            known_address_keys(user, address)[0],
            1,
            timeout=settings.LOGIN_KNOWN_BROWSER_DAYS * 86400,
        )
    except CACHE_UNAVAILABLE:
        logger.warning("known sign-in address not recorded: cache unavailable", exc_info=True)


class KnownBrowserCookieMiddleware:
    """Sets the `known_browser` cookie on the response to a successful sign-in: this account's
    mark first, then the browser's other accounts, signed with the time of this sign-in.

    A password change that keeps its browser signed in (Django's update_session_auth_hash, on
    the admin's password pages) counts as a sign-in there: the browser and its address stay
    known, bound to the new password, while every other browser is forgotten. The owner who
    reacts to an attack by changing her password is not left lockable everywhere."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        session_hash = _session_auth_hash(request)
        response = self.get_response(request)
        if session_hash is not None and not hasattr(request, "known_browser_account_marks"):
            _remember_after_password_change(request, session_hash)
        account = getattr(request, "known_browser_account_marks", None)
        if account is None:
            return response
        # The account's marks made with a key being rotated out give way to the new one.
        others = [other for other in known_browser_marks(request) if other not in account]
        marks = [account[0], *others][:KNOWN_BROWSER_ACCOUNTS]
        response.set_cookie(
            KNOWN_BROWSER_COOKIE,
            signing.dumps(marks, salt=KNOWN_BROWSER_SALT),
            max_age=settings.LOGIN_KNOWN_BROWSER_DAYS * 86400,
            secure=settings.SESSION_COOKIE_SECURE,
            httponly=True,
            samesite="Lax",
        )
        return response


def _session_auth_hash(request) -> str | None:
    """The password-derived hash of a signed-in session, read only for a POST carrying a session
    cookie (reading the session of any other request would add `Vary: Cookie` to it)."""
    if request.method != "POST" or settings.SESSION_COOKIE_NAME not in request.COOKIES:
        return None
    return request.session.get(HASH_SESSION_KEY)


def _remember_after_password_change(request, session_hash_before: str) -> None:
    if _session_auth_hash(request) in (None, session_hash_before):
        return
    user = get_user(request)  # read again: request.user may hold the old password hash
    if user.is_authenticated:
        remember_signed_in_browser(None, request, user)


def sign_in_locks_clear(*, username: str) -> None:
    """Clears the username's sign-in counters, new browsers' and known browsers' (django-axes'
    reset, with the keys username_key makes); the addresses' counters stay."""
    for prefix in (USERNAME_KEY_PREFIX, KNOWN_BROWSER_USERNAME_KEY_PREFIX):
        axes_reset(username=f"{prefix}{username}")


class SignInLimitsUnavailableMiddleware(MiddlewareMixin):
    """While the failure counters' cache (Redis) cannot be reached, the sign-in pages and their
    submissions answer a 503 page (logged), not a 500 or a form that cannot work: it fails
    closed, unlike the API's rate limiter, as the counters are all that stops guessing."""

    def process_request(self, request):
        if request.method in ("GET", "HEAD") and _is_sign_in_page(request):
            try:
                cache.get(SIGN_IN_PROBE_KEY)
            except CACHE_UNAVAILABLE:
                return _sign_in_unavailable(request)
        return None

    def process_exception(self, request, exception):
        if not isinstance(exception, CACHE_UNAVAILABLE) or not _is_sign_in_page(request):
            return None
        logger.error("sign-in refused: the sign-in limits' cache is unavailable", exc_info=True)
        return _sign_in_unavailable(request)


SIGN_IN_PROBE_KEY = "login:probe"


def _is_sign_in_page(request) -> bool:
    # Checked on every GET: the admin's path is resolved once, not per request.
    return request.path in _sign_in_paths()


@functools.cache
def _sign_in_paths() -> tuple[str, str]:
    return settings.LOGIN_URL, reverse("admin:login")


def _sign_in_unavailable(request):
    return protected_page(
        request, "registration/signin_unavailable.html", status=503, retry_after=30
    )


@receiver(user_locked_out)
def _count_lockout(sender, **kwargs):
    """Every lock-out page is counted (the dashboard's sign-in lock-outs, docs/metrics.md)."""
    metrics.sign_in_locked_out()
