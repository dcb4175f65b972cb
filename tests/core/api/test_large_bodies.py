"""A body over DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MiB) is a 413 on every path:
the envelope for the API, the OAuth error object on every OAuth endpoint (spec "Errors" rule 3;
the consent form's too since Hardening IV point 9), an HTML page elsewhere; never a 500,
never reported as an error (tests/config/test_sentry.py checks error tracking itself)."""

import http.client
import json
import logging
import os
from io import BytesIO
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.test import Client

from tests.core.api.envelope import assert_envelope, assert_html_error_page
from tests.servers import Gunicorn
from tests.settings_helpers import run_python

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.core.api.urls")]

LIMIT = settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def json_body(size: int) -> bytes:
    """A JSON object of exactly `size` bytes."""
    return b'{"a": "' + b"x" * (size - 9) + b'"}'


def form_body(size: int, **fields) -> str:
    """A urlencoded form of exactly `size` bytes: `fields` and a padding field."""
    head = urlencode(fields) + "&" if fields else ""
    padding = "padding="
    return head + padding + "x" * (size - len(head) - len(padding))


@pytest.fixture
def errors_logged(caplog):
    caplog.set_level(logging.WARNING)
    return lambda: [r for r in caplog.records if r.levelno >= logging.ERROR]


def assert_too_large(response):
    body = assert_envelope(response, 413, "invalid_request_error", "request_too_large", "body")
    assert str(LIMIT) in body["message"]


def assert_oauth_too_large(response):
    assert response.status_code == 413
    assert response.json() == {
        "error": "invalid_request",
        "error_description": f"The request body exceeds the limit of {LIMIT} bytes.",
    }
    assert response["Cache-Control"] == "no-store"


def test_limit_is_the_documented_2_5_mib():
    assert LIMIT == 2_621_440


@pytest.mark.parametrize("path", ["/api/v2/test-echo", "/api/v2/stores"])
def test_a_json_body_over_the_limit_is_a_413_envelope(path, api_key, signalled, errors_logged):
    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Bearer {api_key}")

    response = client.post(
        path,
        json_body(LIMIT + 1),
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="large-body-key-0001",
    )

    assert_too_large(response)
    assert signalled == []
    assert errors_logged() == []


def test_a_json_body_of_exactly_the_limit_is_served():
    response = Client().post("/api/v2/test-echo", json_body(LIMIT), content_type="application/json")

    assert response.status_code == 200
    assert len(response.json()["data"]["a"]) == LIMIT - 9


def test_the_size_is_refused_before_the_credential_is_looked_at():
    response = Client().post(
        "/api/v2/stores", json_body(LIMIT + 1), content_type="application/json"
    )

    assert_too_large(response)


@pytest.mark.parametrize("path", ["/oauth/token", "/oauth/revoke"])
def test_a_form_over_the_limit_on_the_oauth_protocol_endpoints_is_a_413_oauth_error(
    path,
    signalled,
    errors_logged,
):
    response = Client(raise_request_exception=False).post(
        path,
        form_body(LIMIT + 1, grant_type="refresh_token", token="t"),
        content_type="application/x-www-form-urlencoded",
    )

    assert_oauth_too_large(response)
    assert signalled == []
    assert errors_logged() == []


@pytest.mark.parametrize(
    "accept", [None, "text/html,application/xhtml+xml"], ids=["cli", "browser"]
)
def test_a_body_over_the_limit_is_the_same_413_oauth_error_on_every_oauth_endpoint(
    schema, user, accept, signalled, errors_logged
):
    # Hardening IV point 9: the consent form's was an HTML page, while its 405 and the other
    # OAuth endpoints' 413 were the RFC 6749 §5.2 object. Every protocol operation the schema
    # tags `oauth` (not the API's installation), each of its methods, signed in with a live
    # consent page (the form's context).
    from oauth_cli.services import cli_application_ensure
    from tests.oauth_cli.flow import authorize_params, consent

    cli_application_ensure()
    browser = Client(raise_request_exception=False)
    browser.force_login(user)
    fields = consent(browser, authorize_params())
    headers = {"HTTP_ACCEPT": accept} if accept else {}
    operations = [
        (path, method)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if "oauth" in operation.get("tags", ()) and not path.startswith("/api/")
    ]
    assert {path for path, _ in operations} == {
        "/.well-known/oauth-authorization-server",
        "/oauth/authorize",
        "/oauth/token",
        "/oauth/revoke",
    }

    for path, method in operations:
        response = browser.generic(
            method.upper(),
            path,
            form_body(LIMIT + 1, **fields),
            content_type="application/x-www-form-urlencoded",
            **headers,
        )

        assert_oauth_too_large(response)
    assert signalled == []
    assert errors_logged() == []


@pytest.mark.parametrize("signed_in", [False, True], ids=["sign-in-form", "change-form"])
def test_an_admin_form_over_the_limit_is_a_413_page(signed_in, user, signalled, errors_logged):
    browser = Client(raise_request_exception=False)
    path = "/admin/login/"
    if signed_in:
        user.is_staff = user.is_superuser = True
        user.save()
        browser.force_login(user)
        path = f"/admin/accounts/user/{user.pk}/change/"

    response = browser.post(
        path,
        form_body(LIMIT + 1, username="a", password="b"),
        content_type="application/x-www-form-urlencoded",
    )

    assert_html_error_page(response, 413)
    assert signalled == []
    assert errors_logged() == []


def test_a_multipart_form_over_the_limit_is_a_413_page(user, signalled):
    user.is_staff = user.is_superuser = True
    user.save()
    browser = Client(raise_request_exception=False)
    browser.force_login(user)

    response = browser.post(
        f"/admin/accounts/user/{user.pk}/change/", {"first_name": "x" * (LIMIT + 1)}
    )

    assert_html_error_page(response, 413)
    assert signalled == []


# --- a chunked body (no Content-Length), as gunicorn hands it over -------------------------


def chunked_post(path: str, body: bytes, content_type="application/json"):
    """What gunicorn's environ holds for `Transfer-Encoding: chunked`: no CONTENT_LENGTH, the
    decoded body in wsgi.input, and wsgi.input_terminated (test_production_server_... below
    sends the real thing)."""
    return Client(raise_request_exception=False).post(
        path,
        body,
        content_type=content_type,
        CONTENT_LENGTH="",
        HTTP_TRANSFER_ENCODING="chunked",
        # gunicorn's body reader ends where the body does (the test client's stream asserts).
        **{"wsgi.input": BytesIO(body), "wsgi.input_terminated": True},
    )


def test_a_chunked_body_over_the_limit_is_a_413_envelope(signalled, errors_logged):
    response = chunked_post("/api/v2/test-echo", json_body(LIMIT + 1))

    assert_too_large(response)
    assert signalled == []
    assert errors_logged() == []


def test_a_chunked_body_within_the_limit_reaches_the_view():
    response = chunked_post("/api/v2/test-echo", b'{"name": "chunked"}')

    assert response.status_code == 200
    assert response.json() == {"data": {"name": "chunked"}}


def test_a_chunked_form_over_the_limit_on_the_token_endpoint_is_a_413_oauth_error():
    response = chunked_post(
        "/oauth/token",
        form_body(LIMIT + 1, grant_type="refresh_token").encode(),
        content_type="application/x-www-form-urlencoded",
    )

    assert_oauth_too_large(response)


# --- error tracking gets none of them -----------------------------------------------------

SENTRY_PROBE = """
import json, django
django.setup()
import sentry_sdk
from django.conf import settings
from django.test import Client
from django.test.utils import override_settings

big = settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1
statuses = {}
with override_settings(ROOT_URLCONF="tests.core.api.urls"):
    client = Client(raise_request_exception=False)
    statuses["api"] = client.post(
        "/api/v2/test-echo", b'"' + b"x" * big + b'"', content_type="application/json"
    ).status_code
    for path in ("/oauth/token", "/admin/login/"):
        statuses[path] = client.post(
            path, "a=" + "x" * big, content_type="application/x-www-form-urlencoded"
        ).status_code
    # and a real error still reaches it: the probe would pass with a deaf Sentry otherwise
    statuses["explode"] = client.get("/test-explode").status_code
sentry_sdk.flush(timeout=10)
print(json.dumps(statuses))
"""


def test_error_tracking_does_not_get_bodies_over_the_limit(ingest):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("SENTRY_")}
    environment.update(DJANGO_SETTINGS_MODULE="config.settings.test", SENTRY_DSN=ingest.dsn)

    result = run_python(SENTRY_PROBE, env=environment)

    assert result.returncode == 0, result.stderr[-3000:]
    # one event: the real error, none for the bodies
    reported = [event["exception"]["values"][-1]["type"] for event in ingest.events()]
    assert reported == ["RuntimeError"]
    statuses = json.loads(result.stdout.strip().splitlines()[-1])
    assert statuses == {"api": 413, "/oauth/token": 413, "/admin/login/": 413, "explode": 500}


# --- over the wire: gunicorn, production settings ----------------------------------------


@pytest.fixture(scope="module")
def production_server(tmp_path_factory):
    """gunicorn with config.settings.production on a free port (plain HTTP: the redirect off)."""
    log_path = tmp_path_factory.mktemp("large-bodies") / "gunicorn.log"
    public = {"ALLOWED_HOSTS": "api.example.com", "BASE_URL": "https://api.example.com"}
    with Gunicorn(log_path, workers=1, **public) as server:
        yield server.port


def wire_post(port: int, path: str, headers: dict, body=None) -> tuple[int, dict, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.putrequest("POST", path, skip_host=True)
        for name, value in {"Host": "api.example.com", **headers}.items():
            connection.putheader(name, value)
        connection.endheaders()
        for chunk in body or []:
            connection.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        if body is not None:
            connection.send(b"0\r\n\r\n")
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), json.loads(response.read())
    finally:
        connection.close()


def test_production_server_answers_413_to_a_declared_length_over_the_limit(production_server):
    # The headers alone: the answer comes before the body is read.
    status, headers, body = wire_post(
        production_server,
        "/api/v2/stores",
        {"Content-Type": "application/json", "Content-Length": str(LIMIT + 1)},
    )

    assert status == 413
    assert body["code"] == "request_too_large"
    assert body["request_id"] == headers["X-Request-Id"]


def test_production_server_answers_413_to_a_chunked_body_over_the_limit(production_server):
    chunks = [b"x" * 65536] * (LIMIT // 65536 + 1)

    status, _, body = wire_post(
        production_server,
        "/oauth/token",
        {"Content-Type": "application/x-www-form-urlencoded", "Transfer-Encoding": "chunked"},
        body=chunks,
    )

    assert status == 413
    assert body["error"] == "invalid_request"
