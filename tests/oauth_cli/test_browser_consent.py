"""One end-to-end run in headless Chromium: sign in, consent page, approve; then refuse."""

import pytest
import requests

from tests.oauth_cli.flow import authorize_params, authorize_url, pkce_pair


@pytest.fixture
def chromium_page(chromium_browser):
    yield chromium_browser.new_page()


def _authorize_url(live_server, redirect_uri, state, challenge) -> str:
    params = authorize_params(redirect_uri=redirect_uri, state=state, code_challenge=challenge)
    return live_server.url + authorize_url(params)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_browser_signs_in_approves_and_refuses(
    live_server, settings, user, loopback_callback, loopback_callback_ipv6, chromium_page
):
    settings.BASE_URL = live_server.url
    page = chromium_page
    verifier, challenge = pkce_pair()

    # sign in from the authorization request
    page.goto(_authorize_url(live_server, loopback_callback.redirect_uri, "s1", challenge))
    assert "/accounts/login/" in page.url
    page.fill("#id_username", user.username)
    page.fill("#id_password", "password")
    response_headers = {}
    page.on(
        "response",
        lambda r: response_headers.update(r.headers) if "/oauth/authorize" in r.url else None,
    )
    page.click("#sign-in")

    # the consent page, framing-proof
    page.wait_for_selector("#approve")
    assert "every store you can access now or later" in page.content()
    assert response_headers.get("x-frame-options") == "DENY"
    assert "frame-ancestors 'none'" in response_headers.get("content-security-policy", "")

    # approve: the browser lands on the CLI's loopback server with the code
    page.click("#approve")
    approved = loopback_callback.wait()
    assert approved["state"] == "s1"
    token = requests.post(
        f"{live_server.url}/oauth/token",
        {
            "grant_type": "authorization_code",
            "client_id": settings.CLI_CLIENT_ID,
            "code": approved["code"],
            "redirect_uri": loopback_callback.redirect_uri,
            "code_verifier": verifier,
        },
    )
    assert token.status_code == 200
    me = requests.get(
        f"{live_server.url}/api/v2/me",
        headers={"Authorization": f"Bearer {token.json()['access_token']}"},
    )
    assert me.json()["data"]["credential_type"] == "oauth"

    # once more, and refuse
    _, challenge = pkce_pair()
    page.goto(_authorize_url(live_server, loopback_callback.redirect_uri, "s2", challenge))
    page.click("#refuse")
    refused = loopback_callback.wait()
    assert refused["error"] == "access_denied"
    assert refused["state"] == "s2"
    assert "code" not in refused

    # an IPv6 loopback callback passes the consent page's CSP too
    _, challenge = pkce_pair()
    page.goto(_authorize_url(live_server, loopback_callback_ipv6.redirect_uri, "s3", challenge))
    page.click("#approve")
    assert loopback_callback_ipv6.wait()["state"] == "s3"
