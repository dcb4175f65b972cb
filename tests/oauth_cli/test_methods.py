"""HTTP methods on the OAuth endpoints: a wrong one is a 405 with `Allow` and the OAuth error
object (spec "Errors" rule 3: the envelope only for rate limits and server errors); HEAD
answers like GET where GET is served."""

import pytest
from django.test import Client

from tests.oauth_cli.flow import authorize_params, authorize_url

METADATA = "/.well-known/oauth-authorization-server"

# (path, methods it serves, as the Allow header lists them, wrong methods)
ENDPOINTS = [
    (METADATA, "GET, HEAD", ["post", "put", "patch", "delete", "options"]),
    ("/oauth/authorize", "GET, HEAD, POST, DELETE", ["put", "patch", "options"]),
    ("/oauth/token", "POST", ["get", "head", "put", "patch", "delete", "options"]),
    ("/oauth/revoke", "POST", ["get", "head", "put", "patch", "delete", "options"]),
]
WRONG_METHODS = [(path, allow, method) for path, allow, methods in ENDPOINTS for method in methods]


def _send(client, method: str, path: str):
    return getattr(client, method)(path)


@pytest.mark.parametrize("signed_in_browser", [False, True], ids=["anonymous", "signed-in"])
@pytest.mark.parametrize(("path", "allow", "method"), WRONG_METHODS)
def test_wrong_method_is_an_oauth_error_405(user, path, allow, method, signed_in_browser):
    client = Client(enforce_csrf_checks=True)  # the 405 comes before any CSRF check
    if signed_in_browser:
        client.force_login(user)

    response = _send(client, method, path)

    assert response.status_code == 405
    assert response["Allow"] == allow
    if method == "head":
        return  # no body to inspect
    assert response.json() == {
        "error": "invalid_request",
        "error_description": f"{method.upper()} is not allowed here; use {allow}.",
    }
    assert response["Cache-Control"] == "no-store"
    assert response["X-Request-Id"].startswith("req_")


def test_method_is_checked_before_sign_in_on_authorize(client):
    response = client.put("/oauth/authorize", "auth_token=x", "application/x-www-form-urlencoded")

    assert response.status_code == 405
    assert response.json()["error"] == "invalid_request"


def test_wrong_method_from_a_browser_on_authorize_is_the_error_page(signed_in):
    response = signed_in.put("/oauth/authorize", HTTP_ACCEPT="text/html")

    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD, POST, DELETE"
    assert response["Content-Type"].startswith("text/html")
    assert "invalid_request" in response.content.decode()


def test_head_on_discovery_answers_like_get_without_a_body(client):
    get = client.get(METADATA)

    head = client.head(METADATA)

    assert head.status_code == 200 == get.status_code
    assert head.content == b""
    assert head["Content-Type"] == get["Content-Type"] == "application/json"
    assert head["Cache-Control"] == get["Cache-Control"]


def test_head_on_authorize_answers_like_get(client, signed_in):
    url = authorize_url(authorize_params())
    bad_url = authorize_url(authorize_params(code_challenge_method="plain"))

    consent_page = signed_in.head(url)
    anonymous = client.head(url)
    refused = signed_in.head(bad_url)

    assert consent_page.status_code == 200
    assert consent_page.content == b""
    assert consent_page["X-Frame-Options"] == "DENY"
    assert anonymous.status_code == 302  # to the sign-in page, like GET
    assert refused.status_code == 302  # parameter rules apply to HEAD too
    assert "error=invalid_request" in refused["Location"]
