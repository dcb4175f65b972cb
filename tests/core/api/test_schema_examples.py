"""Every operation of /api/schema/ carries examples (what ReDoc shows beside each schema): a
response example for each success status that has a body, a request example for each body,
and every example is valid against the schema it illustrates."""

import copy

import jsonschema
import pytest
from rest_framework.test import APIClient

METHODS = ("get", "put", "post", "patch", "delete")


def operations(schema):
    return [
        (f"{method.upper()} {path}", operation)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    ]


def examples_of(media: dict) -> dict:
    if "example" in media:
        return {"example": media["example"]}
    return {name: example["value"] for name, example in media.get("examples", {}).items()}


def as_json_schema(node):
    """OpenAPI 3.0 to JSON Schema: `nullable: true` becomes "or null" (the only keyword of
    the 3.0 dialect these documents use that JSON Schema reads differently)."""
    if isinstance(node, list):
        return [as_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {key: as_json_schema(value) for key, value in node.items()}
    if converted.pop("nullable", False):
        return {"anyOf": [converted, {"type": "null"}]}
    return converted


def validate(document: dict, schema: dict, value):
    root = {
        **as_json_schema(copy.deepcopy(schema)),
        "components": as_json_schema(copy.deepcopy(document["components"])),
    }
    jsonschema.Draft7Validator(root, format_checker=jsonschema.FormatChecker()).validate(value)


def test_every_success_response_with_a_body_has_an_example(schema):
    missing = []
    for name, operation in operations(schema):
        # A redirect is the success answer of the consent form.
        successes = [s for s in operation["responses"] if s[0] in "23"]
        assert successes, name
        for status in successes:
            for media_type, media in operation["responses"][status].get("content", {}).items():
                if not examples_of(media):
                    missing.append(f"{name} {status} {media_type}")
    assert missing == []


def test_every_request_body_has_an_example(schema):
    missing = [
        f"{name} {media_type}"
        for name, operation in operations(schema)
        for media_type, media in operation.get("requestBody", {}).get("content", {}).items()
        if not examples_of(media)
    ]
    assert missing == []


def test_success_responses_without_an_example_have_no_body(schema):
    # The only success answers left without an example: 204s and redirects (no body at all).
    bodiless = {
        f"{name} {status}"
        for name, operation in operations(schema)
        for status, response in operation["responses"].items()
        if status[0] in "23" and not response.get("content")
    }
    assert bodiless
    assert all(entry.rsplit(" ", 1)[1] in {"204", "302", "303"} for entry in bodiless), bodiless


def all_examples(schema):
    for name, operation in operations(schema):
        for media_type, media in operation.get("requestBody", {}).get("content", {}).items():
            for example, value in examples_of(media).items():
                yield f"{name} request {media_type} {example}", media["schema"], value
        for status, response in operation["responses"].items():
            for media_type, media in response.get("content", {}).items():
                for example, value in examples_of(media).items():
                    yield f"{name} {status} {media_type} {example}", media["schema"], value


def test_every_example_is_valid_against_its_schema(schema):
    checked = []
    for where, media_schema, value in all_examples(schema):
        try:
            validate(schema, media_schema, value)
        except jsonschema.ValidationError as error:
            pytest.fail(f"{where}: {error.message} at {list(error.absolute_path)}")
        checked.append(where)
    assert len(checked) >= 35


def test_an_example_that_breaks_its_schema_is_caught(schema):
    # The validation above is not vacuous: a wrong type, a missing field and a bad enum fail.
    coupon = schema["paths"]["/api/v1/coupons/{id}"]["get"]["responses"]["200"]
    media = coupon["content"]["application/json"]
    good = next(iter(examples_of(media).values()))
    validate(schema, media["schema"], good)
    for broken in (
        {**good, "id": "42"},
        {key: value for key, value in good.items() if key != "code"},
        {**good, "type": "FREE"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            validate(schema, media["schema"], broken)


def test_list_examples_are_whole_pages(schema):
    coupons = schema["paths"]["/api/v1/coupons"]["get"]["responses"]["200"]
    page = next(iter(examples_of(coupons["content"]["application/json"]).values()))
    assert page["data"][0]["code"] == "SUMMER25"
    assert page["meta"]["path"].endswith("/api/v1/coupons")
    assert page["links"]["first"].endswith("/api/v1/coupons?page=1")
    deliveries = schema["paths"]["/api/v2/webhook-deliveries"]["get"]["responses"]["200"]
    page = next(iter(examples_of(deliveries["content"]["application/json"]).values()))
    assert page["meta"]["path"].endswith("/api/v2/webhook-deliveries")
    events = schema["paths"]["/api/v2/events"]["get"]["responses"]["200"]
    page = next(iter(examples_of(events["content"]["application/json"]).values()))
    assert page["data"][0]["type"] == "order.completed"
    assert page["meta"]["retention_days"] == 30


@pytest.mark.django_db
def test_redoc_page_renders_the_served_schema_with_its_examples():
    client = APIClient()
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert b"/api/schema/" in docs.content  # ReDoc loads the served document
    served = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert served.status_code == 200
    document = served.json()
    me = document["paths"]["/api/v2/me"]["get"]["responses"]["200"]["content"]
    assert me["application/json"]["examples"]["Me"]["value"]["data"]["username"] == "alice"
