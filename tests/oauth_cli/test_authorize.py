"""GET/POST/DELETE /oauth/authorize: parameter rules, login, consent page, approve, refuse."""

import re
import time
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.test import Client
from oauth2_provider.models import Grant

from oauth_cli.authorize import SESSION_KEY
from oauth_cli.models import Installation
from oauth_cli.selectors import token_checksum
from tests.oauth_cli.flow import (
    REDIRECT_URI,
    approve,
    authorize_params,
    authorize_url,
    consent,
    form_fields,
    query_of,
)

# (parameter overrides, expected error): errors sent back to the validated callback.
REDIRECTED_ERRORS = [
    ({"response_type": None}, "invalid_request"),
    ({"response_type": "token"}, "unsupported_response_type"),
    ({"response_type": "code token"}, "unsupported_response_type"),
    ({"code_challenge": None}, "invalid_request"),
    ({"code_challenge": "a" * 42}, "invalid_request"),
    ({"code_challenge": "a" * 44}, "invalid_request"),
    ({"code_challenge": "a" * 42 + "="}, "invalid_request"),
    ({"code_challenge_method": None}, "invalid_request"),
    ({"code_challenge_method": "plain"}, "invalid_request"),
    ({"code_challenge_method": "s256"}, "invalid_request"),
    ({"scope": "read"}, "invalid_scope"),
    ({"scope": "admin write"}, "invalid_scope"),
    ({"approval_prompt": "auto"}, "invalid_request"),
]


@pytest.mark.parametrize(("overrides", "error"), REDIRECTED_ERRORS)
def test_bad_parameter_redirects_with_error_and_original_state(signed_in, overrides, error):
    params = authorize_params(state="keep-me", **overrides)

    response = signed_in.get(authorize_url(params))

    assert response.status_code == 302
    assert response["Location"].startswith(REDIRECT_URI + "?")
    query = query_of(response["Location"])
    assert query["error"] == error
    assert query["state"] == "keep-me"
    assert "code" not in query


@pytest.mark.parametrize("state", [None, ""])
def test_missing_state_is_an_error_without_state(signed_in, state):
    response = signed_in.get(authorize_url(authorize_params(state=state)))

    assert response.status_code == 302
    query = query_of(response["Location"])
    assert query["error"] == "invalid_request"
    assert "state" not in query


@pytest.mark.parametrize(
    "state",
    ["st\x00", "st\n", "st\t", "st\x7f", "st\u00e9"],
    ids=["nul", "trailing-newline", "tab", "del", "non-ascii"],
)
def test_a_state_outside_vschar_is_refused_at_the_callback(signed_in, state):
    # RFC 6749 Appendix A.5: state = 1*VSCHAR (%x20-7E)
    response = signed_in.get(authorize_url(authorize_params(state=state)))

    assert response.status_code == 302
    assert response["Location"].startswith(REDIRECT_URI + "?")
    query = query_of(response["Location"])
    assert query["error"] == "invalid_request"
    assert "state" in query["error_description"]
    # RFC 6749 §4.1.2.1: the error carries the state exactly as received, percent-encoded
    assert query["state"] == state
    assert "code" not in query


def test_every_vschar_makes_a_state_that_comes_back_as_sent(signed_in):
    state = "".join(map(chr, range(0x20, 0x7F)))

    assert approve(signed_in, authorize_params(state=state))["state"] == state


def test_errors_are_checked_before_login(client):
    response = client.get(authorize_url(authorize_params(code_challenge_method="plain")))

    assert response.status_code == 302
    assert query_of(response["Location"])["error"] == "invalid_request"


@pytest.mark.parametrize(
    ("client_id", "error"),
    [
        (None, "invalid_request"),
        ("not-a-uuid", "invalid_client"),
        ("00000000-0000-4000-8000-000000000000", "invalid_client"),
    ],
)
def test_bad_client_is_shown_not_redirected(signed_in, client_id, error):
    response = signed_in.get(authorize_url(authorize_params(client_id=client_id)))

    assert response.status_code == 400
    assert "Location" not in response
    assert response.json()["error"] == error
    assert response.json()["error_description"]


BAD_REDIRECT_URIS = [
    None,
    "http://localhost:5000/callback",
    "http://example.com:5000/callback",
    "https://127.0.0.1:5000/callback",
    "http://127.0.0.1/callback",
    "http://127.0.0.1:0/callback",
    "http://127.0.0.1:70000/callback",
    "http://127.0.0.1:abc/callback",
    "http://127.0.0.1:5000/other",
    "http://127.0.0.1:5000/callback/",
    "http://127.0.0.1:5000/callback#frag",
    "http://127.0.0.1:5000/callback?x=1",
    "http://user:pw@127.0.0.1:5000/callback",
    "http://*.0.0.1:5000/callback",
    "http://127.0.0.1:*/callback",
    "http://[::2]:5000/callback",
    "http://127.0.0.2:5000/callback",
    "custom-scheme://callback",
]


@pytest.mark.parametrize("redirect_uri", BAD_REDIRECT_URIS)
def test_bad_redirect_uri_is_shown_not_redirected(signed_in, redirect_uri):
    response = signed_in.get(authorize_url(authorize_params(redirect_uri=redirect_uri)))

    assert response.status_code == 400
    assert "Location" not in response
    assert response.json()["error"] == "invalid_request"
    assert "redirect_uri" in response.json()["error_description"]


def test_duplicated_redirect_uri_is_refused(signed_in):
    query = urlencode(authorize_params()) + "&redirect_uri=" + "http://127.0.0.1:1/callback"

    response = signed_in.get("/oauth/authorize?" + query)

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


def test_browser_gets_the_error_as_a_page(signed_in):
    response = signed_in.get(
        authorize_url(authorize_params(redirect_uri="http://localhost:1/callback")),
        HTTP_ACCEPT="text/html,application/xhtml+xml",
    )

    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    assert b"invalid_request" in response.content
    assert response["X-Frame-Options"] == "DENY"


@pytest.mark.parametrize("port", [1, 53682, 65535])
@pytest.mark.parametrize("host", ["127.0.0.1", "[::1]"])
def test_any_loopback_port_is_accepted(signed_in, host, port):
    params = authorize_params(redirect_uri=f"http://{host}:{port}/callback")

    response = signed_in.get(authorize_url(params))

    assert response.status_code == 200


def test_scope_may_be_omitted(signed_in):
    assert signed_in.get(authorize_url(authorize_params(scope=None))).status_code == 200


def test_anonymous_is_sent_to_login_and_back(client, user):
    url = authorize_url(authorize_params())

    # when
    response = client.get(url)

    # then: the login page, which returns to the same authorization request
    assert response.status_code == 302
    login_url = response["Location"]
    assert login_url.startswith(settings.LOGIN_URL)
    page = client.get(login_url)
    assert page.status_code == 200
    assert b'name="password"' in page.content
    back = client.post(
        login_url,
        {"username": user.username, "password": "password", "next": query_of(login_url)["next"]},
    )
    assert back.status_code == 302
    assert back["Location"] == url
    assert client.get(back["Location"]).status_code == 200


def test_consent_page_explains_the_grant_and_is_protected(signed_in, user):
    response = signed_in.get(authorize_url(authorize_params()), HTTP_ORIGIN="https://evil.example")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert "admin" in html
    assert "every store you can access now or later" in html
    assert "before you own a store" in html
    assert user.username in html
    assert 'id="approve"' in html and 'id="refuse"' in html
    assert "<script" not in html  # works without JavaScript
    assert response["X-Frame-Options"] == "DENY"
    csp = response["Content-Security-Policy"]
    assert "default-src 'none'" in csp
    assert "frame-ancestors 'none'" in csp
    assert "script-src 'none'" in csp
    # No referrer leaves the site, yet the form's POST carries a real Origin for Django's check.
    assert response["Referrer-Policy"] == "same-origin"
    assert response["Cache-Control"] == "no-store"
    assert "Access-Control-Allow-Origin" not in response


def test_no_cors_on_the_authorization_endpoint(signed_in):
    response = signed_in.options(
        "/oauth/authorize",
        HTTP_ORIGIN="https://evil.example",
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
    )

    assert "Access-Control-Allow-Origin" not in response


def test_approve_redirects_with_code_and_state(signed_in, user):
    params = authorize_params()
    fields = consent(signed_in, params)
    assert set(fields) == {"_token", "auth_token", "client_id", "state"}

    response = signed_in.post("/oauth/authorize", fields)

    assert response.status_code == 303
    query = query_of(response["Location"])
    assert query["state"] == params["state"]
    assert Grant.objects.filter(code=token_checksum(query["code"]), user=user).exists()
    assert Installation.objects.filter(user=user).count() == 1


def test_approving_twice_keeps_one_installation(signed_in, user):
    for _ in range(2):
        signed_in.post("/oauth/authorize", consent(signed_in, authorize_params()))

    assert Installation.objects.filter(user=user).count() == 1


@pytest.mark.parametrize("how", ["form", "delete"])
def test_refuse_redirects_with_access_denied(signed_in, user, how):
    params = authorize_params()
    fields = consent(signed_in, params)

    if how == "form":
        response = signed_in.post("/oauth/authorize", {**fields, "_method": "DELETE"})
    else:
        body = urlencode({"auth_token": fields["auth_token"], "_token": fields["_token"]})
        response = signed_in.delete(
            "/oauth/authorize", body, content_type="application/x-www-form-urlencoded"
        )

    assert response.status_code == 303
    query = query_of(response["Location"])
    assert query == {
        "error": "access_denied",
        "state": params["state"],
        "iss": settings.BASE_URL,
    } | ({"error_description": query["error_description"]} if "error_description" in query else {})
    assert not Grant.objects.filter(user=user).exists()
    assert not Installation.objects.filter(user=user).exists()


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"auth_token": None}, "auth_token"),
        ({"auth_token": "forged"}, "auth_token"),
        ({"client_id": "00000000-0000-4000-8000-000000000000"}, "client_id"),
        ({"client_id": None}, "client_id"),
        ({"state": "other"}, "state"),
        ({"state": None}, "state"),
    ],
)
def test_approve_with_mismatched_fields_issues_no_code(signed_in, user, change, reason):
    fields = {**consent(signed_in, authorize_params()), **change}

    response = signed_in.post(
        "/oauth/authorize", {k: v for k, v in fields.items() if v is not None}
    )

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert "Location" not in response
    assert not Grant.objects.filter(user=user).exists()


def test_auth_token_is_single_use(signed_in, user):
    fields = consent(signed_in, authorize_params())
    assert signed_in.post("/oauth/authorize", fields).status_code == 303

    again = signed_in.post("/oauth/authorize", fields)

    assert again.status_code == 400
    assert Grant.objects.filter(user=user).count() == 1


def test_auth_token_of_another_request_in_the_session_binds_its_own_request(signed_in):
    first = authorize_params(state="first")
    second = authorize_params(state="second")
    first_fields = consent(signed_in, first)
    consent(signed_in, second)

    response = signed_in.post("/oauth/authorize", {**first_fields, "state": "second"})

    assert response.status_code == 400


def test_expired_authorization_session_issues_no_code(signed_in, user):
    fields = consent(signed_in, authorize_params())
    session = signed_in.session
    pending = session[SESSION_KEY]
    pending[fields["auth_token"]]["expires_at"] = time.time() - 1
    session[SESSION_KEY] = pending
    session.save()

    response = signed_in.post("/oauth/authorize", fields)

    assert response.status_code == 400
    assert "expired" in response.json()["error_description"]
    assert not Grant.objects.filter(user=user).exists()


def test_auth_token_from_another_browser_session_is_refused(user, signed_in):
    fields = consent(signed_in, authorize_params())
    other = Client()
    other.force_login(user)

    response = other.post("/oauth/authorize", fields)

    assert response.status_code == 400
    assert not Grant.objects.filter(user=user).exists()


@pytest.mark.parametrize("token", [None, "", "x" * 64])
@pytest.mark.parametrize("method", ["post", "delete"])
def test_csrf_failure_is_refused(user, token, method):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    fields = consent(client, authorize_params())
    fields = {**fields, "_token": token}
    fields = {k: v for k, v in fields.items() if v is not None}

    if method == "post":
        response = client.post("/oauth/authorize", fields)
    else:
        response = client.delete(
            "/oauth/authorize", urlencode(fields), content_type="application/x-www-form-urlencoded"
        )

    assert response.status_code == 403
    assert response.json()["error"] == "invalid_request"
    assert "CSRF" in response.json()["error_description"]
    assert not Grant.objects.filter(user=user).exists()


def test_csrf_token_in_the_token_field_is_accepted(user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    fields = consent(client, authorize_params())

    response = client.post("/oauth/authorize", fields)

    assert response.status_code == 303
    assert "code" in query_of(response["Location"])


def test_answer_needs_a_signed_in_browser(client, signed_in):
    fields = consent(signed_in, authorize_params())

    response = client.post("/oauth/authorize", fields)

    assert response.status_code == 401
    assert response.json()["error"] == "access_denied"


def test_login_page_is_protected_against_framing(client):
    response = client.get(settings.LOGIN_URL)

    assert response.status_code == 200
    assert response["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]


def test_consent_form_fields_parse(signed_in):
    html = signed_in.get(authorize_url(authorize_params())).content.decode()

    assert form_fields(html)["client_id"] == settings.CLI_CLIENT_ID


@pytest.mark.parametrize(
    ("origin", "good_token", "status"),
    [
        ("null", True, 403),  # an opaque origin (sandboxed frame, data: URL) is cross-site
        ("null", False, 403),
        ("https://evil.example", True, 403),
        ("http://testserver", True, 303),
    ],
)
def test_csrf_origin_rules(user, origin, good_token, status):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    fields = consent(client, authorize_params())
    if not good_token:
        fields["_token"] = "y" * 64

    response = client.post("/oauth/authorize", fields, HTTP_ORIGIN=origin)

    assert response.status_code == status


@pytest.mark.parametrize(
    ("redirect_uri", "form_action"),
    [
        ("http://127.0.0.1:5000/callback", "form-action 'self' http://127.0.0.1:5000;"),
        # Chrome ignores IPv6 literals in CSP source lists: the scheme is the narrowest source
        ("http://[::1]:5000/callback", "form-action 'self' http:;"),
    ],
)
def test_consent_form_may_only_post_here_and_redirect_to_the_callback(
    signed_in, redirect_uri, form_action
):
    response = signed_in.get(authorize_url(authorize_params(redirect_uri=redirect_uri)))

    assert form_action in response["Content-Security-Policy"]


@pytest.mark.parametrize(
    ("field", "status", "error"),
    [
        ("state", 302, "invalid_request"),  # not a VSCHAR (RFC 6749 Appendix A.5)
        ("response_type", 302, "unsupported_response_type"),
        ("scope", 302, "invalid_scope"),
        ("code_challenge", 302, "invalid_request"),
        ("code_challenge_method", 302, "invalid_request"),
        ("redirect_uri", 400, "invalid_request"),
        ("client_id", 400, "invalid_client"),
    ],
)
def test_a_nul_byte_in_an_authorize_parameter_is_refused(signed_in, field, status, error):
    params = authorize_params()
    params[field] = params[field] + "\x00"

    response = signed_in.get(authorize_url(params))

    assert response.status_code == status
    if status == 302:
        assert query_of(response["Location"])["error"] == error
    else:
        assert response.json()["error"] == error


def test_auth_token_is_single_use_even_when_a_stale_session_copy_is_saved_back(signed_in, user):
    # given: the session as a second request (a double-click) loaded it, before the first saved
    fields = consent(signed_in, authorize_params())
    stale = dict(signed_in.session.items())
    assert signed_in.post("/oauth/authorize", fields).status_code == 303

    # when: that second request saves its copy, with the auth_token still in it, and answers
    session = signed_in.session
    session.update(stale)
    session.save()
    again = signed_in.post("/oauth/authorize", fields)

    # then
    assert again.status_code == 400
    assert again.json()["error"] == "invalid_request"
    assert Grant.objects.filter(user=user).count() == 1


def test_approve_answers_temporarily_unavailable_when_single_use_cannot_be_checked(
    signed_in, user, monkeypatch
):
    from django.core.cache import cache

    fields = consent(signed_in, authorize_params())

    def cache_down(*args, **kwargs):
        raise ConnectionError("redis is down")

    monkeypatch.setattr(cache, "add", cache_down)

    response = signed_in.post("/oauth/authorize", fields)

    assert response.status_code == 503
    assert response.json()["error"] == "temporarily_unavailable"
    assert not Grant.objects.filter(user=user).exists()
    assert not Installation.objects.filter(user=user).exists()


def _refuse_scopes(*args, **kwargs):
    return False


def _fail_storing_the_code(self, request, code, expires=None):
    from oauthlib.oauth2.rfc6749 import errors

    raise errors.InvalidRequestError(description="storage refused", request=request)


@pytest.mark.parametrize(
    ("hook", "replacement"),
    [
        ("validate_scopes", _refuse_scopes),  # oauthlib refuses: an error redirect
        ("_create_authorization_code", _fail_storing_the_code),  # issuing itself fails
    ],
)
def test_failed_approval_leaves_no_installation(signed_in, user, monkeypatch, hook, replacement):
    from oauth_cli.validators import CliOAuth2Validator

    fields = consent(signed_in, authorize_params())
    monkeypatch.setattr(CliOAuth2Validator, hook, replacement)

    response = signed_in.post("/oauth/authorize", fields)

    assert response.status_code in (303, 400)
    assert "code=" not in response.get("Location", "")
    assert not Grant.objects.filter(user=user).exists()
    assert not Installation.objects.filter(user=user).exists()


def test_installation_and_code_are_written_together(signed_in, user, monkeypatch):
    """A code never exists without its installation: a failure creating the installation
    takes the code back too."""
    from oauth_cli import validators

    fields = consent(signed_in, authorize_params())

    def installation_fails(**kwargs):
        raise RuntimeError("installation insert failed")

    monkeypatch.setattr(validators, "installation_ensure", installation_fails)
    browser = Client(raise_request_exception=False)
    browser.cookies = signed_in.cookies

    response = browser.post("/oauth/authorize", fields)

    assert response.status_code == 500
    assert not Grant.objects.filter(user=user).exists()
    assert not Installation.objects.filter(user=user).exists()


def test_not_you_signs_out_and_comes_back_to_the_same_request(signed_in, user):
    # given: the consent page, signed in as `user`
    url = authorize_url(authorize_params())
    html = signed_in.get(url).content.decode()
    assert f"Not {user.username}?" in html and 'id="sign-out"' in html
    assert "/api/v2/oauth/installation" not in html  # no raw API call shown to a person
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)

    # when: "Sign out"
    response = signed_in.post("/accounts/logout/", {"csrfmiddlewaretoken": token, "next": url})

    # then: signed out, and the same authorization request asks for a sign-in again
    assert response.status_code == 302 and response["Location"] == url
    again = signed_in.get(url)
    assert again.status_code == 302 and again["Location"].startswith("/accounts/login/")
