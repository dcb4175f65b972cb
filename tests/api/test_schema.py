"""The OpenAPI schema: served, valid, and generated without warnings (every view described)."""

import re
from urllib.parse import urlsplit

import pytest
import yaml
from django.contrib.staticfiles import finders
from django.core.management import call_command
from rest_framework.test import APIClient


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
def test_operations_that_need_a_body_say_so(tmp_path, method, path):
    # A body the schema calls optional would let clients omit it and get a 422.
    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--file", str(target))
    operation = yaml.safe_load(target.read_text())["paths"][path][method]
    assert operation["requestBody"]["required"] is True


@pytest.fixture(scope="module")
def schema(tmp_path_factory):
    target = tmp_path_factory.mktemp("schema") / "schema.yaml"
    call_command("spectacular", "--file", str(target))
    return yaml.safe_load(target.read_text())


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
            if status != "429":
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
