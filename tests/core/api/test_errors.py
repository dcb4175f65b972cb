"""The one error envelope (spec "Errors", docs/design.md "Errors") for every status we answer."""

import logging
import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

from core.api.errors import ERROR_CODES
from core.api.middleware import RequestIdLogFilter
from tests.core.api.envelope import assert_envelope, assert_html_error_page
from tests.factories import make_api_key

pytestmark = pytest.mark.django_db


def test_400_unparseable_json(auth_client):
    response = auth_client.post(
        "/api/v2/stores", "{not json", content_type="application/json", HTTP_IDEMPOTENCY_KEY="k"
    )
    assert_envelope(response, 400, "invalid_request_error", "bad_request", param="body")


@pytest.mark.parametrize("body", ["[1, 2]", '"text"', "42", "null"])
def test_400_json_body_that_is_not_an_object(body, auth_client):
    response = auth_client.post(
        "/api/v2/stores", body, content_type="application/json", HTTP_IDEMPOTENCY_KEY="k"
    )
    assert_envelope(response, 400, "invalid_request_error", "bad_request", param="body")


def test_401(api_client):
    assert_envelope(api_client.get("/api/v2/me"), 401, "authentication_error", "unauthenticated")


def test_403(user, store, client_for):
    client = client_for(make_api_key(user, abilities=["coupon"]))
    assert_envelope(client.get("/api/v2/me"), 403, "authorization_error", "forbidden")


def test_404_resource(auth_client, other_store):
    response = auth_client.get(f"/api/v2/stores/{other_store.id}")
    assert_envelope(response, 404, "not_found_error", "resource_not_found")


@pytest.mark.parametrize("path", ["/api/v2/nothing-here", "/api/v2/me/", "/api/v3/me", "/api/"])
def test_404_for_unknown_urls(path, auth_client):
    assert_envelope(auth_client.get(path), 404, "not_found_error", "resource_not_found")


def test_404_for_unknown_api_url_without_credential_and_with_post():
    response = Client().post("/api/v2/nothing-here", {"a": 1})
    assert_envelope(response, 404, "not_found_error", "resource_not_found")


def test_405(auth_client):
    response = auth_client.delete("/api/v2/me")
    assert_envelope(response, 405, "invalid_request_error", "method_not_allowed")


def test_405_options_is_not_served(auth_client):
    response = auth_client.options("/api/v2/stores")
    assert_envelope(response, 405, "invalid_request_error", "method_not_allowed")
    # the 405's Allow names what the path serves, and not the method just refused
    assert response["Allow"] == "GET, POST, HEAD"


@pytest.mark.parametrize(
    "path", ["/api/v2/me", "/api/v2/stores", "/api/v2/permissions", "/api/v1/coupons"]
)
def test_allow_lists_only_methods_that_are_served(path, auth_client):
    allowed = [m.strip() for m in auth_client.get(path)["Allow"].split(",")]
    assert "OPTIONS" not in allowed
    assert auth_client.options(path).status_code == 405
    for method in allowed:
        if method in ("GET", "HEAD"):
            response = auth_client.generic(method, path)
            assert response.status_code == 200, (method, path)
        else:
            # an empty body: any answer but 405 shows the method is served
            response = auth_client.generic(method, path, "{}", content_type="application/json")
            assert response.status_code != 405, (method, path)


def test_405_of_an_unsupported_method_keeps_an_honest_allow(auth_client):
    response = auth_client.delete("/api/v2/me")
    assert_envelope(response, 405, "invalid_request_error", "method_not_allowed")
    assert response["Allow"] == "GET, HEAD"


def test_405_on_plain_django_views():
    response = Client().post("/healthz")
    assert_envelope(response, 405, "invalid_request_error", "method_not_allowed")


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "QUERY"])
@pytest.mark.parametrize("path", ["/healthz", "/docs/errors"])
def test_405_on_get_only_views_comes_before_the_csrf_check(path, method):
    # a browser-like client without a CSRF cookie: the answer is still the 405, not a 403
    response = Client(enforce_csrf_checks=True).generic(method, path)
    assert_envelope(response, 405, "invalid_request_error", "method_not_allowed")
    assert response["Allow"] == "GET, HEAD"


def test_409(auth_client):
    auth_client.post(
        "/api/v2/stores", {"name": "A", "slug": "aaa"}, format="json", HTTP_IDEMPOTENCY_KEY="k"
    )
    response = auth_client.post(
        "/api/v2/stores", {"name": "B", "slug": "bbb"}, format="json", HTTP_IDEMPOTENCY_KEY="k"
    )
    assert_envelope(response, 409, "conflict_error", "conflict", param="Idempotency-Key")


def test_415(auth_client):
    response = auth_client.post(
        "/api/v2/stores", "name=a&slug=abc", content_type="text/plain", HTTP_IDEMPOTENCY_KEY="k"
    )
    assert_envelope(response, 415, "invalid_request_error", "unsupported_media_type")


def test_422_names_the_field_and_lists_errors(auth_client):
    response = auth_client.post(
        "/api/v2/stores", {"name": "A", "slug": "-"}, format="json", HTTP_IDEMPOTENCY_KEY="k"
    )
    body = assert_envelope(response, 422, "validation_error", "validation_failed", param="slug")
    assert list(body["errors"]) == ["slug"]
    assert body["errors"]["slug"][0]


def test_429(auth_client, settings, frozen_rate_limit_clock):
    settings.API_RATE_LIMIT_PER_MINUTE = 1
    auth_client.get("/api/v2/me")
    response = auth_client.get("/api/v2/me")
    assert_envelope(response, 429, "rate_limit_error", "rate_limit_exceeded")
    assert int(response["Retry-After"]) >= 1


@pytest.mark.urls("tests.core.api.urls")
def test_500_from_an_api_view_has_no_trace(auth_client):
    auth_client.raise_request_exception = False
    response = auth_client.get("/api/v2/test-explode")
    body = assert_envelope(response, 500, "api_error", "api_error")
    assert "secret internal detail" not in response.content.decode()
    assert "Traceback" not in body["message"]


@pytest.mark.urls("tests.core.api.urls")
def test_500_from_a_plain_django_view_under_api_has_no_trace():
    response = Client(raise_request_exception=False).get("/api/v2/test-raise/server-error")
    assert_envelope(response, 500, "api_error", "api_error")
    assert "secret internal detail" not in response.content.decode()


# --- unexpected exceptions are seen: signalled and logged as Django does ------------------


@pytest.fixture
def request_log(caplog):
    # The console handler of LOGGING carries this filter; caplog's handler gets the same one.
    caplog.handler.addFilter(RequestIdLogFilter())
    caplog.set_level(logging.ERROR, logger="django.request")
    return caplog


@pytest.mark.urls("tests.core.api.urls")
@pytest.mark.parametrize(
    "path",
    ["/api/v2/test-explode", "/api/v2/test-raise/server-error", "/test-raise/server-error"],
    ids=["drf-view", "django-view-under-api", "html-page"],
)
def test_an_unexpected_exception_is_signalled_and_logged_with_the_request_id(
    path, api_key, signalled, request_log
):
    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Bearer {api_key}")

    response = client.get(path)

    # then: a 500 whatever the page, and Django's signal was sent once, for this request
    assert response.status_code == 500
    request_id = response["X-Request-Id"]
    [(request, exception)] = signalled
    assert request.request_id == request_id
    assert isinstance(exception, RuntimeError)
    # and django.request logged it once at ERROR, with the traceback and the request id
    [record] = [r for r in request_log.records if r.name == "django.request"]
    assert record.levelno == logging.ERROR
    assert record.getMessage() == f"Internal Server Error: {path}"
    assert record.exc_info[0] is RuntimeError
    assert "secret internal detail" in str(record.exc_info[1])
    assert record.request_id == request_id
    assert record.request.request_id == request_id


@pytest.mark.urls("tests.core.api.urls")
def test_the_test_client_sees_the_exception_of_an_api_view(auth_client):
    """Django's test client re-raises what got_request_exception reports: an API view's
    unexpected exception is no longer swallowed into the envelope unseen."""
    with pytest.raises(RuntimeError, match="secret internal detail"):
        auth_client.get("/api/v2/test-explode")


def test_expected_errors_are_not_reported_as_exceptions(auth_client, signalled, request_log):
    assert auth_client.get("/api/v2/stores/999999").status_code == 404
    assert auth_client.delete("/api/v2/me").status_code == 405

    assert signalled == []
    assert not [r for r in request_log.records if r.levelno >= logging.ERROR]


# --- JSON for the API and the OAuth protocol endpoints, HTML pages elsewhere ---------------

HANDLED = [
    ("bad-request", 400, "bad_request", "invalid_request_error"),
    ("permission-denied", 403, "forbidden", "authorization_error"),
    ("not-found", 404, "resource_not_found", "not_found_error"),
    ("server-error", 500, "api_error", "api_error"),
]


@pytest.mark.urls("tests.core.api.urls")
@pytest.mark.parametrize(("kind", "status", "code", "type_"), HANDLED, ids=[h[0] for h in HANDLED])
def test_django_error_handlers_answer_the_envelope_under_api(kind, status, code, type_):
    response = Client(raise_request_exception=False).get(f"/api/v2/test-raise/{kind}")

    assert_envelope(response, status, type_, code)
    assert "secret internal detail" not in response.content.decode()


@pytest.mark.urls("tests.core.api.urls")
@pytest.mark.parametrize(("kind", "status", "code", "type_"), HANDLED, ids=[h[0] for h in HANDLED])
def test_django_error_handlers_answer_html_pages_elsewhere(kind, status, code, type_):
    response = Client(raise_request_exception=False).get(f"/test-raise/{kind}")

    assert_html_error_page(response, status)


@pytest.mark.parametrize("path", ["/nowhere", "/admin/no-such-page/", "/oauth/authorize/x"])
def test_404_pages_outside_the_api_are_html(path, user):
    user.is_staff = True
    user.save()
    client = Client()
    client.force_login(user)

    assert_html_error_page(client.get(path), 404)


def test_a_failing_consent_page_answers_an_html_500(user, monkeypatch):
    from oauth_cli import validators
    from oauth_cli.services import cli_application_ensure
    from tests.oauth_cli.flow import authorize_params, consent

    cli_application_ensure()
    browser = Client(raise_request_exception=False)
    browser.force_login(user)
    fields = consent(browser, authorize_params())

    def installation_fails(**kwargs):
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(validators, "installation_ensure", installation_fails)

    assert_html_error_page(browser.post("/oauth/authorize", fields), 500)


def test_a_csrf_failure_on_the_admin_sign_in_is_an_html_page():
    response = Client(enforce_csrf_checks=True).post(
        "/admin/login/", {"username": "a", "password": "b"}
    )

    html = assert_html_error_page(response, 403)
    assert "CSRF" in html


def test_oauth_protocol_endpoints_answer_the_protocol_error_object(user):
    # the metadata document is for programs: its errors are JSON too, RFC 6749's object
    # (spec "Errors" rule 3; tests/oauth_cli/test_methods.py has every endpoint)
    response = Client().post("/.well-known/oauth-authorization-server")
    assert response.status_code == 405
    assert response.json()["error"] == "invalid_request"


def test_every_response_has_a_request_id(auth_client):
    first = auth_client.get("/api/v2/me")
    second = auth_client.get("/api/v2/me")
    assert first["X-Request-Id"].startswith("req_")
    assert first["X-Request-Id"] != second["X-Request-Id"]


def test_docs_page_lists_every_code():
    response = APIClient().get("/docs/errors")
    assert response.status_code == 200
    html = response.content.decode()
    for code, spec in ERROR_CODES.items():
        assert f'id="{code}"' in html
        assert spec.type in html
    for code in [
        "bad_request",
        "unauthenticated",
        "forbidden",
        "resource_not_found",
        "conflict",
        "cursor_expired",
        "validation_failed",
        "rate_limit_exceeded",
        "api_error",
    ]:
        assert code in ERROR_CODES


def test_spec_statuses_and_types():
    expected = {
        "bad_request": (400, "invalid_request_error"),
        "unauthenticated": (401, "authentication_error"),
        "forbidden": (403, "authorization_error"),
        "resource_not_found": (404, "not_found_error"),
        "conflict": (409, "conflict_error"),
        "cursor_expired": (410, "invalid_request_error"),
        "validation_failed": (422, "validation_error"),
        "rate_limit_exceeded": (429, "rate_limit_error"),
        "api_error": (500, "api_error"),
    }
    for code, (status, type_) in expected.items():
        assert (ERROR_CODES[code].status, ERROR_CODES[code].type) == (status, type_)


def test_400_for_a_lone_surrogate_in_the_body(auth_client):
    response = auth_client.post(
        "/api/v2/stores",
        '{"name": "\\ud800", "slug": "shoppe"}',
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="k",
    )
    assert_envelope(response, 400, "invalid_request_error", "bad_request", param="body")


def test_406_when_json_is_not_acceptable(auth_client):
    response = auth_client.get("/api/v2/me", HTTP_ACCEPT="text/html")
    assert_envelope(response, 406, "invalid_request_error", "not_acceptable")


def test_400_for_a_deeply_nested_body(auth_client):
    body = '{"name": ' + "[" * 100_000 + "]" * 100_000 + ', "slug": "shoppe"}'
    response = auth_client.post(
        "/api/v2/stores", body, content_type="application/json", HTTP_IDEMPOTENCY_KEY="k"
    )
    assert_envelope(response, 400, "invalid_request_error", "bad_request", param="body")


@pytest.mark.parametrize(
    "charset",
    [
        # Python's bytes-to-bytes and str-to-str codecs: decoding raised TypeError, zlib.error
        # or OSError, a 500
        *["rot13", "rot_13", "zlib", "zlib_codec", "bz2", "base64", "hex"],
        # names no codec has
        *["no-such-charset", '"bogus"', ""],
    ],
)
def test_415_for_a_charset_that_is_not_a_known_text_encoding(charset, auth_client):
    response = auth_client.post(
        "/api/v2/stores",
        b'{"name": "Shop", "slug": "shoppe"}',
        content_type=f"application/json; charset={charset}",
        HTTP_IDEMPOTENCY_KEY="k",
    )
    body = assert_envelope(response, 415, "invalid_request_error", "unsupported_media_type")
    assert charset.strip('"') in body["message"]


@pytest.mark.parametrize(
    ("charset", "body"),
    [
        ("utf-8", b'{"name": "\xff", "slug": "shoppe"}'),
        ("utf-16", b'{\x00"\x00'),
        ("ascii", '{"name": "caf\u00e9", "slug": "shoppe"}'.encode("latin-1")),
    ],
)
def test_400_for_a_body_the_declared_charset_cannot_decode(charset, body, auth_client):
    response = auth_client.post(
        "/api/v2/stores",
        body,
        content_type=f"application/json; charset={charset}",
        HTTP_IDEMPOTENCY_KEY="k",
    )
    assert_envelope(response, 400, "invalid_request_error", "bad_request", param="body")


def test_a_text_charset_other_than_utf8_is_decoded(auth_client):
    response = auth_client.post(
        "/api/v2/stores",
        '{"name": "Caf\u00e9", "slug": "cafe"}'.encode("latin-1"),
        content_type="application/json; charset=ISO-8859-1",
        HTTP_IDEMPOTENCY_KEY="k",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["data"]["name"] == "Caf\u00e9"


def test_every_request_is_logged_with_its_request_id(auth_client, caplog):
    # The console handler of LOGGING carries this filter; caplog's handler gets the same one.
    caplog.handler.addFilter(RequestIdLogFilter())
    with caplog.at_level(logging.INFO, logger="storefront.requests"):
        response = auth_client.get("/api/v2/stores/999999")
    assert response.status_code == 404
    lines = [
        record
        for record in caplog.records
        if record.name == "storefront.requests" and record.request_id == response["X-Request-Id"]
    ]
    assert len(lines) == 1
    assert lines[0].levelno == logging.INFO
    # the route, not the path: no id of the request in it
    assert re.fullmatch(r"GET /api/v2/stores/<\w+> 404 \d+\.\dms", lines[0].getMessage())


def test_the_front_page_leads_to_the_reference_the_errors_and_the_admin(client):
    response = client.get("/")

    assert response.status_code == 200
    page = response.content.decode()
    for target in ("/api/docs/", "/api/schema/", "/docs/errors", "/admin/"):
        assert f'href="{target}"' in page
        assert client.get(target).status_code in (200, 302)
