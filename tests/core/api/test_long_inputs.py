"""Every string a client can send is checked for length before any other rule (Hardening IV
point 1; docs/api/hardening.md "Length first").

A pattern that backtracks runs in time quadratic in the length of what it reads, and DRF runs a
field's validators even after `max_length` has failed: a long enough string would hold a process.
These tests walk what the OpenAPI schema says a client can send, so a new endpoint, field, parameter
or header is walked without editing them: every field of every request body (JSON and the OAuth
forms), every query parameter, and the headers we parse (`Authorization`, `X-STORE`,
`Idempotency-Key`), each with pathological strings of 24,000 characters. Each must be refused with a
4xx in the endpoint's error shape within BUDGET_SECONDS of CPU, and leave nothing stored.
"""

import json
import socket
import time
import uuid
from urllib.parse import urlencode

import pytest
from django.apps import apps
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.test import Client

from core.api.fields import StrictCharField
from core.api.models import IdempotencyKey
from events.services import record
from oauth_cli.services import cli_application_ensure
from tests.core.api.envelope import ENVELOPE_KEYS
from tests.factories import CouponFactory, WebhookChannelFactory
from tests.oauth_cli.flow import REDIRECT_URI, authorize_params, consent, query_of
from tests.webhooks.dns import PUBLIC_IPV4
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db

LENGTH = 24_000
PATHOLOGICAL = {
    "text then NUL": "a" * LENGTH + "\x00",
    "spaces then NUL": " " * LENGTH + "\x00",
    "'a.' repeated": "a." * (LENGTH // 2),
    "NULs only": "\x00" * LENGTH,
}
# CPU seconds of this process per request (the test client serves it in process): what the
# rules cost, whatever else runs on the shared machine. A refusal by length is far under it;
# a backtracking pattern over a long string is far over it.
BUDGET_SECONDS = 0.5
FORM = "application/x-www-form-urlencoded"
JSON = "application/json"


@pytest.fixture(autouse=True)
def _budgets_out_of_the_way(settings):
    """Hundreds of refused requests from one client: no rate limit may answer for the rule."""
    settings.API_RATE_LIMIT_PER_MINUTE = 1_000_000
    settings.API_AUTH_FAILURES_PER_MINUTE = 1_000_000
    settings.OAUTH_RATE_LIMIT_PER_MINUTE = 1_000_000


@pytest.fixture(autouse=True)
def _public_dns(monkeypatch):
    """Every host name resolves to a public address: a channel URL that is not the field
    under test passes its SSRF check without outside DNS (tests/webhooks/dns.py)."""
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host in ("localhost", "127.0.0.1", "::1") or host.replace(".", "").isdigit():
            return real(host, port, *args, **kwargs)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC_IPV4, port or 443))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture
def world(user, store, api_key):
    """What the paths of the schema name: a coupon, a delivery (of an order's event)."""
    cli_application_ensure()
    coupon = CouponFactory(store=store, code="WALKED")
    channel = WebhookChannelFactory(store=store, event_types=["order.completed"])
    with transaction.atomic():
        event = record(
            store=store,
            type="order.completed",
            subject=("order", 1),
            data={"total_cents": 1250, "currency": "EUR"},
        )
    delivery = WebhookDelivery.objects.get(event=event)
    path_values = {
        "id": coupon.pk,
        "delivery": delivery.pk,
        "channel": channel.uid,
        "store": store.pk,
        "order": 1,
    }
    client = Client(raise_request_exception=False)
    client.get("/api/v2/me", HTTP_AUTHORIZATION=f"Bearer {api_key}")  # warm: URLs, connection
    return {"api_key": api_key, "store": store, "user": user, "path_values": path_values}


def stored_rows() -> dict[str, int]:
    """Rows per model; an idempotency record keeps a refusal for its replay (by design), so only
    those that record something else count."""
    rows = {model._meta.label: model.objects.count() for model in apps.get_models()}
    rows["api.IdempotencyKey"] = IdempotencyKey.objects.exclude(
        response_status__range=(400, 499)
    ).count()
    return rows


def required_headers(operation) -> dict:
    """A valid value of each header the operation requires but the walk does not vary."""
    required = [
        p["name"]
        for p in operation.get("parameters", [])
        if p["in"] == "header" and p.get("required")
    ]
    return {"HTTP_IDEMPOTENCY_KEY": uuid.uuid4().hex} if "Idempotency-Key" in required else {}


def operations(schema):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if isinstance(operation, dict) and "responses" in operation:
                yield path, method, operation


def resolve(schema, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def body_properties(schema, operation, media: str) -> dict:
    """The properties of the request body in `media` (of every member of a oneOf)."""
    content = operation.get("requestBody", {}).get("content", {}).get(media)
    if content is None:
        return {}
    body = resolve(schema, content["schema"])
    properties = {}
    for member in body.get("oneOf", [body]):
        properties |= resolve(schema, member).get("properties", {})
    return properties


def example_body(operation, media: str) -> dict:
    """The first request example in `media`: a valid body, so one field alone is wrong."""
    content = operation["requestBody"]["content"][media]
    examples = content.get("examples", {})
    return dict(next(iter(examples.values()))["value"]) if examples else {}


def parameters(operation, where: str) -> list[str]:
    return [p["name"] for p in operation.get("parameters", []) if p["in"] == where]


def url(path: str, path_values: dict) -> str:
    return path.replace("{", "{0[").replace("}", "]}").format(path_values)


def refusal_problem(path: str, response, seconds: float) -> str | None:
    """What is wrong with the answer to a pathological input, or None: a 4xx in the error shape
    of the endpoint (the envelope; RFC 6749 §5.2's object on the OAuth endpoints), in time."""
    if seconds > BUDGET_SECONDS:
        return f"took {seconds:.2f} s"
    if response.status_code == 302 and path == "/oauth/authorize":
        # RFC 6749 §4.1.2.1: an error after the client and redirect URI goes back to the client
        location = response["Location"]
        if not location.startswith(REDIRECT_URI + "?") or "error" not in query_of(location):
            return f"redirected to {location[:80]}"
        return "echoed the input" if len(location) > 2_000 else None
    if not 400 <= response.status_code < 500:
        return f"answered {response.status_code}"
    if not response["Content-Type"].startswith(JSON):
        return f"answered {response['Content-Type']}"
    body = response.json()
    expected = ENVELOPE_KEYS if path.startswith("/api/") else {"error", "error_description"}
    if not expected <= set(body):
        return f"answered {sorted(body)}"
    if len(response.content) > 2_000:
        return "echoed the input"
    return None


class Walk:
    """Sends requests, times each and collects what is wrong, then checks nothing was stored."""

    def __init__(self, client: Client):
        self.client = client
        self.problems: list[str] = []
        self.sent = 0
        self.rows = stored_rows()

    def send(self, what: str, method: str, path: str, target: str, **kwargs):
        started = time.process_time()
        response = self.client.generic(method.upper(), target, **kwargs)
        seconds = time.process_time() - started
        self.sent += 1
        problem = refusal_problem(path, response, seconds)
        if problem is not None:
            self.problems.append(f"{method.upper()} {path} {what}: {problem}")
        return response

    def check(self):
        assert self.sent
        assert self.problems == [], "\n".join(self.problems)
        assert stored_rows() == self.rows


def _encoded(body: dict, media: str) -> str:
    return json.dumps(body) if media == JSON else urlencode(body, doseq=True)


def test_every_field_of_every_json_body_is_refused_by_length_first(schema, world):
    # given
    walk = Walk(Client(raise_request_exception=False))
    headers = {
        "HTTP_AUTHORIZATION": f"Bearer {world['api_key']}",
        "HTTP_X_STORE": world["store"].slug,
    }
    walked_fields = set()

    for path, method, operation in operations(schema):
        properties = body_properties(schema, operation, JSON)
        for name, prop in properties.items():
            walked_fields.add((path, method, name))
            for label, value in PATHOLOGICAL.items():
                body = example_body(operation, JSON)
                body[name] = [value] if prop.get("type") == "array" else value

                # when
                response = walk.send(
                    f"{name}={label}",
                    method,
                    path,
                    url(path, world["path_values"]),
                    data=_encoded(body, JSON),
                    content_type=JSON,
                    **headers,
                    **required_headers(operation),
                )

                # then: the length is the field's only error (no other rule read the value)
                errors = response.json().get("errors", {}) if response.status_code == 422 else {}
                if list(errors) != [name] or len(errors[name]) != 1:
                    walk.problems.append(f"{method} {path} {name}={label}: errors {errors}")

    walk.check()
    # The walk reached the bodies the schema has today (a new one is walked unasked).
    assert {("/api/v2/stores", "post", "name"), ("/api/v1/coupons", "post", "code")} <= (
        walked_fields
    )
    assert ("/api/v2/webhook-destination", "put", "event_types") in walked_fields


def test_the_store_name_of_the_review_is_refused_in_milliseconds(auth_client):
    # The review's request: a 24,000-character name ending in NUL (1.4-2.6 s in production).
    started = time.process_time()
    response = auth_client.post(
        "/api/v2/stores",
        {"name": "a" * LENGTH + "\x00", "slug": "walked"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="review-name",
    )
    seconds = time.process_time() - started

    assert response.status_code == 422
    assert response.json()["errors"] == {
        "name": ["Ensure this field has no more than 255 characters."]
    }
    assert seconds < BUDGET_SECONDS


@pytest.mark.parametrize(
    "name",
    ["Acme", " Acme ", "a\u00a0b", "\u2003x"],
)
def test_a_store_name_with_a_visible_character_and_no_nul_is_accepted(auth_client, name):
    response = auth_client.post(
        "/api/v2/stores",
        {"name": name, "slug": "named"},
        format="json",
        HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex,
    )

    assert response.status_code == 201, response.json()
    assert response.json()["data"]["name"] == name


@pytest.mark.parametrize("name", ["", " ", "\t\n", "\u00a0\u2003", "a\x00", "\x00"])
def test_a_blank_store_name_or_one_with_nul_is_refused(auth_client, name):
    response = auth_client.post(
        "/api/v2/stores",
        {"name": name, "slug": "named"},
        format="json",
        HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex,
    )

    assert response.status_code == 422
    assert list(response.json()["errors"]) == ["name"]


def test_every_query_parameter_is_refused_by_length_first(schema, world):
    walk = Walk(Client(raise_request_exception=False))
    headers = {
        "HTTP_AUTHORIZATION": f"Bearer {world['api_key']}",
        "HTTP_X_STORE": world["store"].slug,
    }
    walked = set()

    for path, method, operation in operations(schema):
        for name in parameters(operation, "query"):
            walked.add((path, name))
            base = authorize_params() if path == "/oauth/authorize" else {}
            for label, value in PATHOLOGICAL.items():
                query = _encoded({**base, name: value}, FORM)
                walk.send(
                    f"?{name}={label}",
                    method,
                    path,
                    f"{url(path, world['path_values'])}?{query}",
                    **headers,
                    **required_headers(operation),
                )

    walk.check()
    assert {("/api/v2/events", "cursor"), ("/oauth/authorize", "state")} <= walked


@pytest.mark.parametrize("header", ["X-STORE", "Idempotency-Key"])
def test_every_parsed_header_is_refused_by_length_first(schema, world, header):
    walk = Walk(Client(raise_request_exception=False))
    walked = set()

    for path, method, operation in operations(schema):
        if header not in parameters(operation, "header"):
            continue
        walked.add((path, method))
        body = {}
        if JSON in operation.get("requestBody", {}).get("content", {}):
            body = {"data": _encoded(example_body(operation, JSON), JSON), "content_type": JSON}
        for label, value in PATHOLOGICAL.items():
            headers = {
                "HTTP_AUTHORIZATION": f"Bearer {world['api_key']}",
                "HTTP_X_STORE": world["store"].slug,
                **required_headers(operation),
                "HTTP_" + header.upper().replace("-", "_"): value,
            }
            walk.send(
                f"{header}: {label}",
                method,
                path,
                url(path, world["path_values"]),
                **body,
                **headers,
            )

    walk.check()
    assert ("/api/v1/coupons/{id}", "delete") in walked


def test_every_authorization_header_is_refused_by_length_first(schema, world):
    walk = Walk(Client(raise_request_exception=False))
    walked = set()

    for path, method, operation in operations(schema):
        schemes = {name for entry in operation.get("security", []) for name in entry}
        scheme = (
            "Bearer" if "bearerAuth" in schemes else "Basic" if "basicAuth" in schemes else None
        )
        if scheme is None:
            continue  # the discovery document and the consent page read no Authorization
        walked.add((path, method))
        for label, value in PATHOLOGICAL.items():
            walk.send(
                f"Authorization: {scheme} {label}",
                method,
                path,
                url(path, world["path_values"]),
                HTTP_AUTHORIZATION=f"{scheme} {value}",
                HTTP_X_STORE=world["store"].slug,
                **required_headers(operation),
            )

    walk.check()
    assert {("/api/v2/stores", "post"), ("/oauth/token", "post")} <= walked


def test_every_field_of_the_oauth_forms_is_refused_by_length_first(schema, world):
    """The token and revocation forms (from their examples) and the consent form (from a live
    consent page of a signed-in browser): oauthlib and our rules never read a long value."""
    browser = Client(raise_request_exception=False)
    browser.force_login(world["user"])
    walk = Walk(browser)
    walked = set()

    for path, method, operation in operations(schema):
        for name in body_properties(schema, operation, FORM):
            walked.add((path, method, name))
            for label, value in PATHOLOGICAL.items():
                if path == "/oauth/authorize":
                    base = consent(browser, authorize_params())
                else:
                    base = example_body(operation, FORM)
                walk.send(
                    f"{name}={label}",
                    method,
                    path,
                    path,
                    data=_encoded({**base, name: value}, FORM),
                    content_type=FORM,
                )

    walk.check()
    assert {
        ("/oauth/token", "post", "code_verifier"),
        ("/oauth/revoke", "post", "token"),
        ("/oauth/authorize", "post", "auth_token"),
        ("/oauth/authorize", "delete", "_token"),
    } <= walked


def test_a_request_string_field_without_a_bound_is_a_configuration_error():
    # The class stays impossible for fields to come: a request string needs its length.
    with pytest.raises(ImproperlyConfigured, match="max_length"):
        StrictCharField()
    assert StrictCharField(max_length=8).run_validation("12345678") == "12345678"
