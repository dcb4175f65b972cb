"""Drives the CLI's authorization-code flow, as the real client does, for the tests."""

import base64
import hashlib
import re
import secrets
from html import unescape
from urllib.parse import parse_qs, urlencode, urlsplit

from django.conf import settings

REDIRECT_URI = "http://127.0.0.1:53682/callback"


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
    return verifier, challenge.decode()


def authorize_params(**overrides) -> dict:
    _, challenge = pkce_pair()
    params = {
        "response_type": "code",
        "client_id": settings.CLI_CLIENT_ID,
        "redirect_uri": REDIRECT_URI,
        "scope": "admin",
        "state": "st-" + secrets.token_hex(4),
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    params.update(overrides)
    return {k: v for k, v in params.items() if v is not None}


def authorize_url(params: dict) -> str:
    return "/oauth/authorize?" + urlencode(params)


def form_fields(html: str) -> dict:
    """The hidden fields of the consent page's Approve form."""
    approve = html.split('id="approve"')[0]
    return {k: unescape(v) for k, v in re.findall(r'name="(\w+)" value="([^"]*)"', approve)}


def query_of(location: str) -> dict:
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def consent(client, params: dict) -> dict:
    """GET the consent page as the signed-in `client`; returns the Approve form's fields."""
    response = client.get(authorize_url(params))
    assert response.status_code == 200, response.content
    return form_fields(response.content.decode())


def approve(client, params: dict) -> dict:
    """Consent + Approve; returns the callback query (`code`, `state`)."""
    fields = consent(client, params)
    response = client.post("/oauth/authorize", fields)
    assert response.status_code == 303, response.content
    assert response["Location"].startswith(params["redirect_uri"] + "?")
    return query_of(response["Location"])


def exchange(client, code: str, verifier: str, redirect_uri: str = REDIRECT_URI, **headers):
    data = {
        "grant_type": "authorization_code",
        "client_id": settings.CLI_CLIENT_ID,
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
    }
    return client.post("/oauth/token", data, **headers)


def refresh(client, refresh_token: str, **headers):
    data = {
        "grant_type": "refresh_token",
        "client_id": settings.CLI_CLIENT_ID,
        "refresh_token": refresh_token,
    }
    return client.post("/oauth/token", data, **headers)


def connect(client) -> dict:
    """Full flow for the signed-in `client`: consent, approve, exchange; the token JSON."""
    verifier, challenge = pkce_pair()
    params = authorize_params(code_challenge=challenge)
    callback = approve(client, params)
    response = exchange(client, callback["code"], verifier)
    assert response.status_code == 200, response.content
    return response.json()


def via_proxy(client_ip: str, forged: str | None = None) -> dict:
    """Headers of a request through one trusted proxy (NUM_PROXIES=1) from `client_ip`, with a
    client-forged X-Forwarded-For entry in front when `forged`."""
    chain = f"{forged}, {client_ip}" if forged else client_ip
    return {"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": chain}
