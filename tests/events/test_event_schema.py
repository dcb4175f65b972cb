"""The journal's OpenAPI operations state every rule a schema can state: the contract run
generates its requests from them, so a looser schema would make it send requests we refuse."""

import re

import pytest

from events.registry import EVENT_TYPES, SUBJECT_TYPES


def _parameters(schema, path) -> dict:
    operation = schema["paths"][path]["get"]
    return {(p["in"], p["name"]): p for p in operation["parameters"]}


PAGING = {
    ("query", "cursor"): {"type": "string", "maxLength": 512},
    ("query", "limit"): {"type": "integer", "minimum": 1, "maximum": 100, "default": 50},
}


def test_the_journal_declares_its_filters_and_paging(schema):
    parameters = _parameters(schema, "/api/v2/events")
    assert {key: p["schema"] for key, p in parameters.items() if key in PAGING} == PAGING
    event_type = parameters["query", "type"]["schema"]
    assert (event_type["minLength"], event_type["maxLength"]) == (1, 120)
    assert "enum" not in event_type  # an unregistered type is an empty page, not a 422
    type_pattern = re.compile(event_type["pattern"])
    for accepted in [*EVENT_TYPES, "order.refunded", "order.*", "*"]:
        assert type_pattern.fullmatch(accepted), accepted
    assert not type_pattern.fullmatch("*.completed")
    assert not type_pattern.fullmatch("order\x00")
    assert "`*`" in parameters["query", "type"]["description"]
    assert parameters["query", "subject_type"]["schema"]["enum"] == sorted(SUBJECT_TYPES)
    subject_id = parameters["query", "subject_id"]["schema"]
    assert (subject_id["minLength"], subject_id["maxLength"]) == (1, 100)
    pattern = re.compile(subject_id["pattern"])
    assert pattern.fullmatch("order_1.a:b-C")
    assert not pattern.fullmatch("a b")


def test_the_order_journal_declares_an_integer_order_and_its_paging(schema):
    parameters = _parameters(schema, "/api/v2/orders/{order}/events")
    assert parameters["path", "order"]["schema"] == {"type": "integer"}
    assert parameters["path", "order"]["required"] is True
    assert {key: p["schema"] for key, p in parameters.items() if key in PAGING} == PAGING
    # an order's journal has no query filters: the order is its filter
    assert not {"type", "subject_type", "subject_id"} & {name for _, name in parameters}


@pytest.mark.parametrize("path", ["/api/v2/events", "/api/v2/orders/{order}/events"])
def test_pages_always_carry_a_cursor_and_410_documents_the_fallback(schema, path):
    responses = schema["paths"][path]["get"]["responses"]
    page = schema["components"]["schemas"][
        responses["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    ]
    assert page["required"] == ["data", "meta"]
    assert page["properties"]["data"]["items"] == {"$ref": "#/components/schemas/Event"}
    assert set(page["properties"]["meta"]["required"]) == {
        "next_cursor",
        "has_more",
        "retention_days",
    }
    expired = responses["410"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert "fallback" in schema["components"]["schemas"][expired]["properties"]
