"""The authorization request rules (spec "GET /oauth/authorize") and the consent session.

Fatal problems (client, redirect URI) are never redirected (RFC 6749 §4.1.2.1); the others go
back to the validated redirect URI with `error` and the original `state`.
"""

import hashlib
import re
import secrets
import time
import uuid
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.core.cache import cache

from core.api.fields import too_long_message

CODE_CHALLENGE_PATTERN = re.compile(r"^[A-Za-z0-9_-]{43}$")  # BASE64URL(SHA-256), RFC 7636 §4.2
STATE_PATTERN = re.compile(r"^[\x20-\x7e]+$")  # state = 1*VSCHAR, RFC 6749 Appendix A.5
LOOPBACK_HOSTS = {"127.0.0.1": "127.0.0.1", "::1": "[::1]"}
SINGLE_VALUED = (
    "response_type",
    "client_id",
    "redirect_uri",
    "scope",
    "state",
    "code_challenge",
    "code_challenge_method",
)
SESSION_KEY = "oauth_cli_authorizations"
MAX_PENDING_PER_SESSION = 5
USED_AUTH_TOKEN_KEY = "oauth_cli:auth_token_used:{checksum}"


class AuthTokenStoreUnavailable(Exception):
    """The shared cache that makes an auth_token single-use could not be reached."""


@dataclass(frozen=True)
class AuthorizeError:
    error: str
    description: str
    # Set only when the redirect URI has been validated: then the error goes back to it.
    redirect_uri: str | None = None
    state: str | None = None


def loopback_redirect_uri_problem(uri: str) -> str | None:
    """RFC 8252 §7.3: `http://127.0.0.1:{port}/callback` or `http://[::1]:{port}/callback`.

    `localhost` (RFC 8252 §8.3), other hosts and schemes, fragments, userinfo, queries and
    wildcards are refused.
    """
    expected = "http://127.0.0.1:{port}/callback or http://[::1]:{port}/callback"
    if any(ch in uri for ch in "#@*\\ ?") or any(ord(ch) < 0x21 for ch in uri):
        return f"redirect_uri must be exactly {expected} (no fragment, query or userinfo)."
    parts = urlsplit(uri)
    if parts.scheme != "http":
        return f"redirect_uri must use http on a loopback address: {expected}."
    host = LOOPBACK_HOSTS.get(parts.hostname or "")
    if host is None:
        return f"redirect_uri must point at a loopback IP (localhost is not accepted): {expected}."
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None or not 1 <= port <= 65535 or parts.netloc != f"{host}:{port}":
        return f"redirect_uri needs an explicit port between 1 and 65535: {expected}."
    if parts.path != "/callback":
        return f"redirect_uri path must be /callback: {expected}."
    return None


def authorize_request_error(params, *, overlong: dict[str, int]) -> AuthorizeError | None:
    """Checks every parameter rule; None when the request may proceed to login/consent.

    `overlong` ({name: limit}, oauth_cli/inputs.py) names the parameters over their length:
    no rule reads them (length first); the client and redirect URI are checked, within their
    bounds, so that another one's error can still go back to the client.
    """
    for name in ("client_id", "redirect_uri"):
        if name in overlong:
            return AuthorizeError("invalid_request", too_long_message(name, overlong[name]))
    duplicated = [name for name in SINGLE_VALUED if len(params.getlist(name)) > 1]
    client_id = params.get("client_id", "")
    if not client_id:
        return AuthorizeError("invalid_request", "client_id is required.")
    if "client_id" in duplicated:
        return AuthorizeError("invalid_request", "client_id must be given once.")
    try:
        uuid.UUID(client_id)
    except ValueError:
        return AuthorizeError("invalid_client", "client_id must be a UUID.")
    if client_id != settings.CLI_CLIENT_ID:
        return AuthorizeError("invalid_client", "Unknown client_id.")
    redirect_uri = params.get("redirect_uri", "")
    if not redirect_uri:
        return AuthorizeError("invalid_request", "redirect_uri is required.")
    if "redirect_uri" in duplicated:
        return AuthorizeError("invalid_request", "redirect_uri must be given once.")
    problem = loopback_redirect_uri_problem(redirect_uri)
    if problem:
        return AuthorizeError("invalid_request", problem)

    state = params.get("state", "") if "state" not in overlong else ""

    def redirected(error: str, description: str) -> AuthorizeError:
        return AuthorizeError(error, description, redirect_uri=redirect_uri, state=state or None)

    if overlong:
        return redirected("invalid_request", too_long_message(*next(iter(overlong.items()))))
    if duplicated:
        return redirected("invalid_request", f"{duplicated[0]} must be given once.")
    response_type = params.get("response_type", "")
    if not response_type:
        return redirected("invalid_request", "response_type is required.")
    if response_type != "code":
        return redirected("unsupported_response_type", "response_type must be code.")
    if not STATE_PATTERN.fullmatch(state):
        return redirected("invalid_request", "state is required: printable ASCII (%x20-7E).")
    code_challenge = params.get("code_challenge", "")
    if not code_challenge:
        return redirected("invalid_request", "code_challenge is required (PKCE).")
    if not CODE_CHALLENGE_PATTERN.match(code_challenge):
        return redirected(
            "invalid_request",
            "code_challenge must be exactly 43 base64url characters (S256 of the verifier).",
        )
    method = params.get("code_challenge_method", "")
    if not method:
        return redirected("invalid_request", "code_challenge_method is required; use S256.")
    if method != "S256":
        return redirected("invalid_request", "code_challenge_method must be S256.")
    scope = params.get("scope")
    if scope is not None and scope.split() and set(scope.split()) != {settings.OAUTH_SCOPE_ADMIN}:
        return redirected("invalid_scope", "The only scope is admin.")
    if params.get("approval_prompt", "force") != "force":
        return redirected("invalid_request", "Consent is always asked; omit approval_prompt.")
    return None


def pending_authorization_create(session, *, user_id: int, request_data: dict) -> str:
    """Holds the validated authorization request in the session under a fresh auth_token,
    which the consent form posts back (binds the form to this request)."""
    now = time.time()
    pending = {
        token: entry
        for token, entry in session.get(SESSION_KEY, {}).items()
        if entry["expires_at"] > now
    }
    while len(pending) >= MAX_PENDING_PER_SESSION:
        pending.pop(min(pending, key=lambda token: pending[token]["expires_at"]))
    auth_token = secrets.token_urlsafe(32)
    pending[auth_token] = {
        **request_data,
        "user_id": user_id,
        "expires_at": now + settings.OAUTH_CONSENT_SECONDS,
    }
    session[SESSION_KEY] = pending
    return auth_token


def _auth_token_claim(auth_token: str) -> bool:
    """True for the first caller only, across processes: two answers to one consent page (a
    double-click) each load their own copy of the session, so removing the entry from it is
    not enough. `cache.add` is atomic on Redis (SET NX). The key outlives the entry: it is
    written after the entry was created and lives as long as an entry may."""
    checksum = hashlib.sha256(auth_token.encode()).hexdigest()
    key = USED_AUTH_TOKEN_KEY.format(checksum=checksum)
    try:
        return cache.add(key, 1, timeout=settings.OAUTH_CONSENT_SECONDS)
    except Exception as error:  # fail closed: without the claim, single use is not assured
        raise AuthTokenStoreUnavailable from error


def pending_authorization_take(session, auth_token: str) -> tuple[dict | None, str | None]:
    """Removes and returns the request bound to `auth_token` (single use), or an error text.

    Raises AuthTokenStoreUnavailable when single use cannot be checked.
    """
    pending = session.get(SESSION_KEY, {})
    entry = pending.pop(auth_token, None) if auth_token else None
    session[SESSION_KEY] = pending
    if entry is None or not _auth_token_claim(auth_token):
        return None, "Unknown or already used auth_token; start again from the CLI."
    if entry["expires_at"] <= time.time():
        return None, "The authorization session expired; start again from the CLI."
    return entry, None
