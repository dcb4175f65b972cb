"""The OpenAPI schema of the webhooks endpoints, derived from their serializers, FilterSet and
the idempotent() decorator: it states every rule a schema can state."""

import pytest

from core.api.idempotency import KEY_PATTERN_SOURCE
from events.registry import EVENT_TYPES
from webhooks.channels.serializers import MAX_EVENT_TYPES
from webhooks.deliveries.filters import EVENT_ID_PATTERN
from webhooks.dispatch.addresses import MAX_URL_LENGTH, URL_PATTERN

CHANNEL = "/api/v2/webhook-destination"
ROTATE = "/api/v2/webhook-destination/rotate-secret"
DELIVERIES = "/api/v2/webhook-deliveries"
REPLAY = "/api/v2/webhook-deliveries/{delivery}/replay"


def resolve(schema, node):
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def request_body(schema, path, method):
    body = schema["paths"][path][method]["requestBody"]
    return body, resolve(schema, body["content"]["application/json"]["schema"])


def parameter(schema, path, method, name):
    parameters = schema["paths"][path][method].get("parameters", [])
    return next((p for p in parameters if p["name"] == name), None)


def test_destination_put_body_states_its_rules(schema):
    body, put = request_body(schema, CHANNEL, "put")

    assert body["required"] is True
    assert put["additionalProperties"] is False
    assert sorted(put["required"]) == ["event_types", "url"]
    url = put["properties"]["url"]
    assert (url["type"], url["maxLength"], url["pattern"]) == (
        "string",
        MAX_URL_LENGTH,
        URL_PATTERN,
    )
    event_types = put["properties"]["event_types"]
    assert (event_types["minItems"], event_types["maxItems"]) == (1, MAX_EVENT_TYPES)
    assert sorted(resolve(schema, event_types["items"])["enum"]) == sorted(EVENT_TYPES)
    assert put["properties"]["enabled"] == {"type": "boolean", "default": True}


def test_replay_body_is_an_optional_object_without_properties(schema):
    body, replay = request_body(schema, REPLAY, "post")

    # the spec's client sends `{}`; sending no body at all is accepted too
    assert body.get("required", False) is False
    assert replay["type"] == "object"
    assert replay["additionalProperties"] is False
    assert not replay.get("properties")


def test_replay_declares_its_key_and_the_replayed_header(schema):
    operation = schema["paths"][REPLAY]["post"]

    key = parameter(schema, REPLAY, "post", "Idempotency-Key")
    assert key["schema"] == {
        "type": "string",
        "minLength": 8,
        "maxLength": 255,
        "pattern": KEY_PATTERN_SOURCE,
    }
    assert key.get("required", False) is False
    for status in ("201", "404", "422"):
        header = operation["responses"][status]["headers"]["Idempotent-Replayed"]
        assert header["schema"] == {"type": "string", "enum": ["true"]}
    assert "Idempotent-Replayed" not in operation["responses"]["409"].get("headers", {})
    # a response header, not a request parameter
    assert parameter(schema, REPLAY, "post", "Idempotent-Replayed") is None


@pytest.mark.parametrize(
    ("path", "method", "statuses"),
    [
        (CHANNEL, "put", ["200", "201", "422"]),
        (CHANNEL, "delete", ["204", "404"]),
        (ROTATE, "post", ["200", "404"]),
    ],
)
def test_channel_writes_declare_an_optional_key(schema, path, method, statuses):
    operation = schema["paths"][path][method]

    key = parameter(schema, path, method, "Idempotency-Key")
    assert (key["schema"]["minLength"], key["schema"]["maxLength"]) == (1, 255)
    assert key.get("required", False) is False
    for status in statuses:
        assert "Idempotent-Replayed" in operation["responses"][status]["headers"], status
    assert "409" in operation["responses"]


def test_delivery_filters_come_from_the_filterset(schema):
    def query(name):
        return parameter(schema, DELIVERIES, "get", name)["schema"]

    names = [p["name"] for p in schema["paths"][DELIVERIES]["get"]["parameters"]]
    assert sorted(names) == sorted(["X-STORE", "event_id", "event_type", "status", "limit", "page"])
    assert query("event_id") == {"type": "string", "pattern": EVENT_ID_PATTERN}
    assert sorted(query("event_type")["enum"]) == sorted(EVENT_TYPES)
    assert sorted(query("status")["enum"]) == ["disabled", "failed", "pending", "succeeded"]
    assert (query("limit")["minimum"], query("limit")["maximum"]) == (1, 100)


def test_delivery_path_parameter_is_a_uuid(schema):
    for path in (f"{DELIVERIES}/{{delivery}}", REPLAY):
        method = "get" if path.endswith("}") else "post"
        delivery = parameter(schema, path, method, "delivery")
        assert delivery["schema"] == {"type": "string", "format": "uuid"}, path
