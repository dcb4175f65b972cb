"""The OpenAPI schema: served, valid, and generated without warnings (every view described)."""

import json
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.test import Client
from drf_spectacular.renderers import OpenApiJsonRenderer, OpenApiYamlRenderer
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.test import APIClient

from oauth_cli.authorize import loopback_redirect_uri_problem
from oauth_cli.serializers import LOOPBACK_REDIRECT_URI_PATTERN
from oauth_cli.services import cli_application_ensure
from tests.oauth_cli.flow import approve, authorize_params, exchange, pkce_pair, refresh
from tests.settings_helpers import run_python


def test_schema_is_valid_and_generated_without_warnings(tmp_path):
    # spectacular raises (SystemExit / SchemaGenerationError) on any warning or invalid schema
    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    schema = yaml.safe_load(target.read_text())
    for path in [
        "/api/v2/me",
        "/api/v2/stores",
        "/api/v2/permissions",
        # Path parameters named as in the spec's endpoint tables.
        "/api/v2/stores/{store}",
        "/api/v1/coupons/{id}",
        "/api/v2/orders/{order}/events",
        "/api/v2/webhook-deliveries/{delivery}",
        "/api/v2/webhook-deliveries/{delivery}/replay",
    ]:
        assert path in schema["paths"]
    assert schema["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"


@pytest.mark.django_db
def test_schema_and_docs_are_served():
    client = APIClient()
    assert client.get("/api/schema/").status_code == 200
    assert client.get("/api/docs/").status_code == 200


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/api/v1/coupons"),
        ("post", "/api/v2/stores"),
        ("put", "/api/v2/webhook-destination"),
    ],
)
def test_operations_that_need_a_body_say_so(schema, method, path):
    # A body the schema calls optional would let clients omit it and get a 422.
    operation = schema["paths"][path][method]
    assert operation["requestBody"]["required"] is True


def test_every_429_declares_its_headers(schema):
    operations = [
        (path, method, operation)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if isinstance(operation, dict) and "responses" in operation
    ]
    assert operations
    for path, method, operation in operations:
        headers = operation["responses"]["429"]["headers"]
        assert headers["Retry-After"]["required"] is True, (method, path)
        assert headers["Retry-After"]["schema"]["type"] == "integer"
        for name in ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"):
            # absent on the store-creation 429, hence optional
            assert headers[name].get("required", False) is False, (method, path, name)
        for status, response in operation["responses"].items():
            if status == "503":  # a bound of the service's own: Retry-After says when to retry
                assert response["headers"]["Retry-After"]["required"] is True, (method, path)
            elif status != "429":
                assert "Retry-After" not in response.get("headers", {}), (method, path, status)


def test_store_creation_declares_idempotent_replayed(schema):
    responses = schema["paths"]["/api/v2/stores"]["post"]["responses"]
    for status in ("201", "422"):
        header = responses[status]["headers"]["Idempotent-Replayed"]
        assert header["schema"] == {"type": "string", "enum": ["true"]}
    assert "Idempotent-Replayed" not in responses["409"].get("headers", {})
    # a response header, not a request parameter
    parameters = schema["paths"]["/api/v2/stores"]["post"].get("parameters", [])
    assert "Idempotent-Replayed" not in [p["name"] for p in parameters]


@pytest.mark.django_db
def test_docs_page_loads_its_scripts_from_our_static_files():
    # ReDoc comes from drf-spectacular-sidecar's static files: pinned, and working offline.
    response = APIClient().get("/api/docs/")
    html = response.content.decode()
    assert response.status_code == 200
    script_sources = re.findall(r"<script[^>]*\ssrc=\"([^\"]+)\"", html)
    assert script_sources
    for source in script_sources:
        assert urlsplit(source).netloc == "", source
        assert source.startswith("/static/drf_spectacular_sidecar/"), source
        assert finders.find(source.removeprefix("/static/")), source
    # Nothing else comes from another host either (templates/drf_spectacular/redoc.html drops
    # the page's Google Fonts links).
    external = {
        urlsplit(url).netloc
        for url in re.findall(r"(?:src|href)=\"([^\"]+)\"", html)
        if urlsplit(url).netloc
    }
    assert external == set(), external


OAUTH_FORM_OPERATIONS = [
    ("/oauth/authorize", "post"),
    ("/oauth/authorize", "delete"),
    ("/oauth/token", "post"),
    ("/oauth/revoke", "post"),
]
OAUTH_OPERATIONS = [
    ("/.well-known/oauth-authorization-server", "get"),
    ("/oauth/authorize", "get"),
    *OAUTH_FORM_OPERATIONS,
]
ERROR_ENVELOPE = {"$ref": "#/components/schemas/ErrorEnvelope"}
OAUTH_ERROR = {"$ref": "#/components/schemas/OAuthError"}


def test_the_oauth_protocol_endpoints_are_described(schema):
    for path, method in OAUTH_OPERATIONS:
        assert method in schema["paths"][path], (method, path)
    # exactly the methods served (HEAD aside): any other is the 405 the contract run expects
    assert set(schema["paths"]["/oauth/authorize"]) == {"get", "post", "delete"}
    assert set(schema["paths"]["/oauth/token"]) == {"post"}
    assert set(schema["paths"]["/oauth/revoke"]) == {"post"}


@pytest.mark.parametrize(("path", "method"), OAUTH_FORM_OPERATIONS)
def test_oauth_operations_take_required_form_bodies(schema, path, method):
    body = schema["paths"][path][method]["requestBody"]
    assert body["required"] is True
    assert list(body["content"]) == ["application/x-www-form-urlencoded"]


@pytest.mark.parametrize(("path", "method"), OAUTH_OPERATIONS)
def test_oauth_errors_are_the_protocol_object_but_429_and_500_the_envelope(schema, path, method):
    responses = schema["paths"][path][method]["responses"]
    for status in ("429", "500"):
        assert responses[status]["content"]["application/json"]["schema"] == ERROR_ENVELOPE
    # 413 is refused before the view: the protocol object, or the 413 page on the consent form
    page = {"text/html": {"schema": {"type": "string"}}}
    protocol_errors = {
        status: response
        for status, response in responses.items()
        if status.startswith(("4", "5"))
        and status not in ("429", "500")
        and not (status == "413" and response["content"] == page)
    }
    assert protocol_errors or path.startswith("/.well-known")
    for status, response in protocol_errors.items():
        json_schema = response["content"]["application/json"]["schema"]
        # 400 may also be the envelope's bad_request: a form body Django cannot parse at all
        assert json_schema == OAUTH_ERROR or json_schema["oneOf"] == [OAUTH_ERROR, ERROR_ENVELOPE]
    assert schema["components"]["schemas"]["OAuthError"]["required"] == ["error"]


def _component(schema, name):
    return schema["components"]["schemas"][name]["properties"]


def _resolved(schema, node):
    """`node` with its `$ref` followed (drf-spectacular names bodies and enums as components)."""
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def test_oauth_fields_state_their_formats(schema, settings):
    authorize = {p["name"]: p for p in schema["paths"]["/oauth/authorize"]["get"]["parameters"]}
    assert {name for name, p in authorize.items() if p.get("required")} == {
        "response_type",
        "client_id",
        "redirect_uri",
        "state",
        "code_challenge",
        "code_challenge_method",
    }
    assert authorize["client_id"]["schema"]["format"] == "uuid"
    assert authorize["client_id"]["schema"]["enum"] == [settings.CLI_CLIENT_ID]
    challenge = authorize["code_challenge"]["schema"]
    assert (challenge["minLength"], challenge["maxLength"]) == (43, 43)
    assert challenge["pattern"] == "^[A-Za-z0-9_-]{43}$"
    assert authorize["code_challenge_method"]["schema"]["enum"] == ["S256"]
    assert authorize["response_type"]["schema"]["enum"] == ["code"]
    assert authorize["state"]["schema"]["minLength"] == 1
    token = schema["paths"]["/oauth/token"]["post"]["requestBody"]["content"]
    grants = [
        _resolved(schema, _resolved(schema, ref)["properties"]["grant_type"])["enum"]
        for ref in _resolved(schema, token["application/x-www-form-urlencoded"]["schema"])["oneOf"]
    ]
    assert grants == [["authorization_code"], ["refresh_token"]]
    token_type = _component(schema, "TokenResponse")["token_type"]
    assert _resolved(schema, token_type)["enum"] == ["Bearer"]


def test_oauth_token_and_revoke_declare_their_headers(schema):
    token = schema["paths"]["/oauth/token"]["post"]["responses"]
    assert token["200"]["headers"]["Cache-Control"]["schema"]["enum"] == ["no-store"]
    assert token["200"]["headers"]["Pragma"]["schema"]["enum"] == ["no-cache"]
    for path in ("/oauth/token", "/oauth/revoke"):
        unauthorized = schema["paths"][path]["post"]["responses"]["401"]
        assert unauthorized["headers"]["WWW-Authenticate"]["required"] is True
    revoke = schema["paths"]["/oauth/revoke"]["post"]["responses"]["200"]
    assert revoke["content"]["application/json"]["schema"] == {
        "type": "array",
        "items": {},
        "maxItems": 0,
    }


@given(st.from_regex(LOOPBACK_REDIRECT_URI_PATTERN, fullmatch=True))
def test_every_redirect_uri_the_schema_allows_is_accepted(uri):
    assert loopback_redirect_uri_problem(uri) is None


@pytest.mark.parametrize(
    "uri",
    [
        "http://localhost:8080/callback",
        "https://127.0.0.1:8080/callback",
        "http://127.0.0.1/callback",
        "http://127.0.0.1:0/callback",
        "http://127.0.0.1:65536/callback",
        "http://127.0.0.1:8080/other",
        "http://[::1]:8080/callback?x=1",
    ],
)
def test_the_redirect_uri_pattern_refuses_what_the_service_refuses(uri):
    assert loopback_redirect_uri_problem(uri) is not None
    assert re.fullmatch(LOOPBACK_REDIRECT_URI_PATTERN, uri) is None


def _assert_described(schema, described, response):
    """The response's body and headers match the schema's description of its status."""
    media_type = response["Content-Type"].split(";")[0]
    body_schema = described["content"][media_type]["schema"]
    jsonschema.validate(response.json(), {**body_schema, "components": schema["components"]})
    for name, header in described.get("headers", {}).items():
        if header.get("required"):
            assert response.has_header(name), name
        if response.has_header(name):
            jsonschema.validate(response[name], header["schema"])


@pytest.mark.django_db
def test_a_real_cli_connection_answers_as_described(schema, user, settings):
    # The contract run cannot mint a code, so the success answers are checked here.
    cli_application_ensure()
    browser = Client()
    browser.force_login(user)
    verifier, challenge = pkce_pair()
    callback = approve(browser, authorize_params(code_challenge=challenge))

    exchanged = exchange(Client(), callback["code"], verifier)
    refreshed = refresh(Client(), exchanged.json()["refresh_token"])
    revoked = Client().post(
        "/oauth/revoke",
        {
            "client_id": settings.CLI_CLIENT_ID,
            "token": refreshed.json()["refresh_token"],
            "token_type_hint": "refresh_token",
        },
    )

    token = schema["paths"]["/oauth/token"]["post"]["responses"]
    for response in (exchanged, refreshed):
        assert response.status_code == 200
        _assert_described(schema, token["200"], response)
    assert revoked.status_code == 200
    _assert_described(schema, schema["paths"]["/oauth/revoke"]["post"]["responses"]["200"], revoked)
    reused = refresh(Client(), exchanged.json()["refresh_token"])
    assert reused.status_code == 400
    _assert_described(schema, token["400"], reused)


def test_operations_that_take_a_body_declare_the_413(schema):
    with_body = [
        (path, method, operation)
        for path, item in schema["paths"].items()
        if path.startswith("/api/") or path in ("/oauth/token", "/oauth/revoke")
        for method, operation in item.items()
        if method in ("post", "put", "patch")
    ]
    assert with_body
    for path, method, operation in with_body:
        response = operation["responses"]["413"]
        # the OAuth protocol endpoints answer it with RFC 6749's object (spec "Errors" rule 3)
        component = "OAuthError" if path.startswith("/oauth/") else "ErrorEnvelope"
        assert response["content"]["application/json"]["schema"] == {
            "$ref": f"#/components/schemas/{component}"
        }, (method, path)
    # the consent form's 413 too, though its other answers are pages (Hardening IV point 9)
    for method in ("post", "delete"):
        too_large = schema["paths"]["/oauth/authorize"][method]["responses"]["413"]
        assert too_large["content"] == {
            "application/json": {"schema": {"$ref": "#/components/schemas/OAuthError"}}
        }


# --- /api/schema/ is built once per process -----------------------------------------------

BUILT_ONCE_PROBE = """
import json, django
django.setup()
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import resolve

# The view's own hook for its generator: count the documents it builds.
view_class = resolve("/api/schema/").func.view_class
builds = []

class CountingGenerator(view_class.generator_class):
    def get_schema(self, *args, **kwargs):
        builds.append(1)
        return super().get_schema(*args, **kwargs)

view_class.generator_class = CountingGenerator
client = Client()
first_yaml = client.get("/api/schema/").content
first_json = client.get("/api/schema/?format=json").content
with CaptureQueriesContext(connection) as queries:
    yaml_again = client.get("/api/schema/", HTTP_ACCEPT="application/yaml").content
    json_again = client.get("/api/schema/", HTTP_ACCEPT="application/json").content
print(json.dumps({
    "builds": len(builds),
    "queries": len(queries),
    "same_yaml": yaml_again == first_yaml,
    "same_json": json_again == first_json,
}))
"""


def test_the_schema_is_built_once_per_process_whatever_the_format():
    # A fresh process: nothing built yet.
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}

    result = run_python(BUILT_ONCE_PROBE, env=environment)

    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {"builds": 1, "queries": 0, "same_yaml": True, "same_json": True}


@pytest.mark.django_db
def test_the_served_schema_is_the_generated_one_with_an_etag(schema, django_assert_num_queries):
    client = Client()
    client.get("/api/schema/")

    with django_assert_num_queries(0):
        response = client.get("/api/schema/")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/vnd.oai.openapi; charset=utf-8"
    assert yaml.safe_load(response.content) == schema
    as_json = client.get("/api/schema/?format=json")
    assert as_json["Content-Type"] == "application/vnd.oai.openapi+json"
    assert json.loads(as_json.content) == schema
    # each format its own validator; the same one on every request
    assert response["ETag"] != as_json["ETag"]
    assert client.get("/api/schema/")["ETag"] == response["ETag"]


@pytest.mark.django_db
def test_a_revalidated_schema_is_a_304_without_a_body():
    client = Client()
    etag = client.get("/api/schema/")["ETag"]

    response = client.get("/api/schema/", HTTP_IF_NONE_MATCH=etag)

    assert response.status_code == 304
    assert response.content == b""
    assert response["ETag"] == etag
    # another format's validator does not match
    assert client.get("/api/schema/?format=json", HTTP_IF_NONE_MATCH=etag).status_code == 200


def test_the_schema_cache_builds_one_document_for_concurrent_first_requests():
    from core.api.schema_view import SchemaCache

    cache = SchemaCache()
    built = []
    barrier = threading.Barrier(8)

    def build():
        built.append(1)
        return {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {}}

    def first_request():
        barrier.wait()
        return cache.rendered(OpenApiJsonRenderer, build)

    with ThreadPoolExecutor(max_workers=8) as pool:
        renderings = list(pool.map(lambda _: first_request(), range(8)))
    yaml_rendering = cache.rendered(OpenApiYamlRenderer, build)

    assert len(built) == 1
    assert all(r is renderings[0] for r in renderings)
    assert json.loads(renderings[0].content)["paths"] == {}
    assert yaml.safe_load(yaml_rendering.content)["paths"] == {}
