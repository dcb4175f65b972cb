"""The whole protocol as the CLI runs it, over real HTTP against a live server."""

import re
from html import unescape
from urllib.parse import urlencode

import pytest
import requests

from tests.factories import MembershipFactory
from tests.oauth_cli.flow import pkce_pair


def hidden(html: str, name: str) -> str:
    return unescape(re.search(rf'name="{name}" value="([^"]*)"', html).group(1))


@pytest.mark.django_db(transaction=True)
def test_cli_connects_uses_refreshes_detects_reuse_and_revokes(
    live_server, settings, user, loopback_callback
):
    settings.BASE_URL = live_server.url
    store = MembershipFactory(user=user).store
    http = requests.Session()

    # discovery
    metadata = http.get(f"{live_server.url}/.well-known/oauth-authorization-server").json()
    verifier, challenge = pkce_pair()
    authorize = (
        metadata["authorization_endpoint"]
        + "?"
        + urlencode(
            {
                "response_type": "code",
                "client_id": settings.CLI_CLIENT_ID,
                "redirect_uri": loopback_callback.redirect_uri,
                "scope": "admin",
                "state": "cli-state-1",
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            }
        )
    )

    # the browser: sign in, then the consent page
    login_page = http.get(authorize)
    assert "/accounts/login/" in login_page.url
    consent_page = http.post(
        login_page.url,
        {
            "csrfmiddlewaretoken": hidden(login_page.text, "csrfmiddlewaretoken"),
            "username": user.username,
            "password": "password",
            "next": hidden(login_page.text, "next"),
        },
    )
    assert consent_page.status_code == 200
    assert "Connect the Storefront CLI" in consent_page.text
    approved = http.post(
        metadata["authorization_endpoint"],
        {
            name: hidden(consent_page.text, name)
            for name in ("_token", "auth_token", "client_id", "state")
        },
    )
    assert approved.history[0].status_code == 303
    callback = loopback_callback.wait()
    assert callback["state"] == "cli-state-1"

    # the CLI: exchange the code
    tokens = requests.post(
        metadata["token_endpoint"],
        {
            "grant_type": "authorization_code",
            "client_id": settings.CLI_CLIENT_ID,
            "code": callback["code"],
            "redirect_uri": loopback_callback.redirect_uri,
            "code_verifier": verifier,
        },
    ).json()
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] == 3600

    def api(path, access_token, **headers):
        return requests.get(
            f"{live_server.url}/api/v2{path}",
            headers={"Authorization": f"Bearer {access_token}", **headers},
        )

    me = api("/me", tokens["access_token"]).json()["data"]
    assert me["credential_type"] == "oauth" and me["username"] == user.username
    stores = api("/stores", tokens["access_token"]).json()["data"]
    assert [s["slug"] for s in stores] == [store.slug]

    # refresh rotates
    refresh_request = {"grant_type": "refresh_token", "client_id": settings.CLI_CLIENT_ID}
    rotated = requests.post(
        metadata["token_endpoint"], {**refresh_request, "refresh_token": tokens["refresh_token"]}
    ).json()
    assert rotated["refresh_token"] != tokens["refresh_token"]
    assert api("/me", rotated["access_token"]).status_code == 200

    # reuse of the rotated-away token kills the family
    reuse = requests.post(
        metadata["token_endpoint"], {**refresh_request, "refresh_token": tokens["refresh_token"]}
    )
    assert reuse.status_code == 400 and reuse.json()["error"] == "invalid_grant"
    assert api("/me", rotated["access_token"]).status_code == 401

    # connect again, then revoke: 401 afterwards
    second = _connect_again(http, metadata, settings, loopback_callback)
    assert api("/me", second["access_token"]).status_code == 200
    revoked = requests.post(
        metadata["revocation_endpoint"],
        {
            "client_id": settings.CLI_CLIENT_ID,
            "token": second["refresh_token"],
            "token_type_hint": "refresh_token",
        },
    )
    assert revoked.status_code == 200 and revoked.json() == []
    unauthenticated = api("/me", second["access_token"])
    assert unauthenticated.status_code == 401
    assert unauthenticated.json()["code"] == "unauthenticated"


def _connect_again(http, metadata, settings, loopback_callback) -> dict:
    verifier, challenge = pkce_pair()
    consent_page = http.get(
        metadata["authorization_endpoint"]
        + "?"
        + urlencode(
            {
                "response_type": "code",
                "client_id": settings.CLI_CLIENT_ID,
                "redirect_uri": loopback_callback.redirect_uri,
                "state": "cli-state-2",
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            }
        )
    )
    fields = {
        name: hidden(consent_page.text, name)
        for name in ("_token", "auth_token", "client_id", "state")
    }
    http.post(metadata["authorization_endpoint"], fields)
    callback = loopback_callback.wait()
    return requests.post(
        metadata["token_endpoint"],
        {
            "grant_type": "authorization_code",
            "client_id": settings.CLI_CLIENT_ID,
            "code": callback["code"],
            "redirect_uri": loopback_callback.redirect_uri,
            "code_verifier": verifier,
        },
    ).json()
