"""django-axes hooks of the sign-in limits (settings in config/settings/logins.py)."""

import logging

import redis
from django.conf import settings
from django.urls import reverse

from oauth_cli.views import protected_page

logger = logging.getLogger(__name__)

USERNAME_KEY_PREFIX = "username:"


def username_key(request, credentials: dict | None) -> str | None:
    """The per-username counter's key: the submitted username, marked as one.

    django-axes hashes each counter's bare value, so without the mark a failed sign-in as
    username "203.0.113.7" would count against the client address 203.0.113.7.
    """
    if credentials is not None and "username" in credentials:
        username = credentials["username"]
    else:
        username = getattr(request, "POST", {}).get("username")
    return None if username is None else f"{USERNAME_KEY_PREFIX}{username}"


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
