"""A new secret (an API key, a signing secret) shown once, on the page the form redirects to.

Every successful POST of the console redirects, so the secret cannot be the POST's answer; it
must not ride in the URL, a cookie, a message or the session (stored in the database, kept for
weeks) either. It waits in the shared cache (Redis in production) under a key derived from the
session's key, for at most SHOWN_ONCE_SECONDS, and the first GET that finds it deletes it: the
one whose delete succeeded shows it, so two racing reloads cannot both (docs/decisions.md
"Console"). A cache that cannot hold it fails the write (the caller's transaction rolls back),
so no secret is made that nobody could see.
"""

import hashlib
import logging

from django.core.cache import cache

from core.api.errors import ServiceUnavailable

logger = logging.getLogger(__name__)

# Long enough for the redirect that follows the form, short enough that an abandoned one
# does not linger.
SHOWN_ONCE_SECONDS = 60


def _slot(request, purpose: str) -> str:
    session_key = request.session.session_key or ""
    digest = hashlib.sha256(f"{purpose}:{session_key}".encode()).hexdigest()
    return f"console:shown-once:{digest}"


def secret_keep_for_next_page(request, *, purpose: str, secret: str) -> None:
    """ServiceUnavailable (503) when the cache cannot keep it (Redis unreachable): call it in
    the transaction that makes the secret, which then rolls back."""
    if request.session.session_key is None:
        request.session.save()
    try:
        cache.set(_slot(request, purpose), secret, timeout=SHOWN_ONCE_SECONDS)
    except Exception:
        logger.warning("console: the cache cannot keep a new secret to show", exc_info=True)
        raise ServiceUnavailable(
            30, "The new secret could not be kept to show it; nothing was changed. Retry."
        ) from None


def secret_take(request, *, purpose: str) -> str | None:
    """The secret kept for this session's next page, once; None afterwards."""
    if request.session.session_key is None:
        return None
    slot = _slot(request, purpose)
    try:
        secret = cache.get(slot)
        if secret is None or not cache.delete(slot):
            return None
    except Exception:
        # Lost with the cache: the page says nothing of it; the member makes another.
        logger.warning("console: the cache cannot give a new secret back", exc_info=True)
        return None
    return secret
