"""What the OpenAPI schema states about the coupon operations: every rule a schema can state,
derived from the serializer, FilterSet, paginator and idempotency classes."""

import pytest


def component(schema, ref):
    return schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]


def parameters(operation):
    return {p["name"]: p for p in operation.get("parameters", [])}


def test_list_parameters_come_from_the_filterset_and_the_paginator(schema):
    listed = parameters(schema["paths"]["/api/v1/coupons"]["get"])
    for name in ("with_trashed", "only_trashed"):
        assert listed[name]["in"] == "query"
        assert sorted(listed[name]["schema"]["enum"]) == ["0", "1", "false", "true"]
        assert "422" in listed[name]["description"]
    assert listed["limit"]["schema"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 100,
        "default": 15,
    }
    assert listed["page"]["schema"]["minimum"] == 1
    ok = schema["paths"]["/api/v1/coupons"]["get"]["responses"]["200"]
    page = component(schema, ok["content"]["application/json"]["schema"]["$ref"])
    assert set(page["required"]) == {"data", "links", "meta"}


def test_coupon_id_is_an_integer_path_parameter(schema):
    for version in ("v1", "v2"):
        for method in ("get", "put", "patch", "delete"):
            operation = schema["paths"][f"/api/{version}/coupons/{{id}}"][method]
            assert parameters(operation)["id"]["schema"] == {"type": "integer"}
            assert parameters(operation)["id"]["in"] == "path"


def test_create_body_states_the_discount_range_of_each_type(schema):
    body = schema["paths"]["/api/v1/coupons"]["post"]["requestBody"]
    assert body["required"] is True
    variants = component(schema, body["content"]["application/json"]["schema"]["$ref"])
    assert variants["discriminator"]["propertyName"] == "type"
    mapping = variants["discriminator"]["mapping"]
    percentage = component(schema, mapping["PERCENTAGE"])
    amount = component(schema, mapping["AMOUNT"])
    # A number within the type's range, or a numeric string of at most two decimals.
    number, string = percentage["properties"]["discount"]["oneOf"]
    assert (number["type"], number["minimum"], number["maximum"]) == ("number", 1, 100)
    assert string["pattern"] == "^[0-9]{1,10}(\\.[0-9]{1,2})?$"
    number, _ = amount["properties"]["discount"]["oneOf"]
    assert (number["minimum"], number["maximum"]) == (1, 9_999_999_999.99)
    for variant in (percentage, amount):
        assert set(variant["required"]) == {"code", "type", "discount", "store_wide"}
        code = variant["properties"]["code"]
        assert (code["pattern"], code["minLength"], code["maxLength"]) == (
            "^[A-Za-z0-9_-]{1,255}$",
            1,
            255,
        )
        assert variant["properties"]["store_wide"] == {"type": "boolean"}
        assert variant["properties"]["limit"]["minimum"] == 1
        assert variant["properties"]["limit"]["nullable"] is True
        assert variant["properties"]["minimum_amount"]["oneOf"][0]["minimum"] == 0
        assert variant["properties"]["minimum_amount"]["oneOf"][0]["nullable"] is True
        assert variant["properties"]["subscription_payments"]["maximum"] == 36
        assert variant["properties"]["products"]["items"]["type"] == "integer"
        assert variant["properties"]["expires_at"]["format"] == "date-time"


def test_patch_body_has_no_required_field(schema):
    body = schema["paths"]["/api/v1/coupons/{id}"]["patch"]["requestBody"]
    patched = component(schema, body["content"]["application/json"]["schema"]["$ref"])
    assert "required" not in patched
    assert patched["properties"]["type"]["$ref"].endswith("/CouponTypeEnum")


def test_response_states_every_field_as_present(schema):
    ok = schema["paths"]["/api/v1/coupons/{id}"]["get"]["responses"]["200"]
    coupon = component(schema, ok["content"]["application/json"]["schema"]["$ref"])
    assert set(coupon["required"]) == set(coupon["properties"]) and len(coupon["properties"]) == 17
    # Amounts are quoted numeric strings; products and variants arrays of integer ids.
    for name in ("discount", "minimum_amount", "maximum_discount_amount"):
        assert coupon["properties"][name]["type"] == "string", name
    for name in ("products", "product_variants"):
        assert coupon["properties"][name]["items"]["type"] == "integer", name


@pytest.mark.parametrize(
    ("path", "method", "replayed"),
    [
        ("/api/v1/coupons", "post", {"201", "422"}),
        ("/api/v1/coupons/{id}", "patch", {"200", "404", "422"}),
        ("/api/v1/coupons/{id}", "delete", {"204", "404"}),
    ],
)
def test_writes_declare_the_idempotency_headers(schema, path, method, replayed):
    operation = schema["paths"][path][method]
    key = parameters(operation)["Idempotency-Key"]
    assert key["in"] == "header"
    assert key.get("required", False) is False
    assert (key["schema"]["minLength"], key["schema"]["maxLength"]) == (1, 255)
    with_header = {
        status
        for status, response in operation["responses"].items()
        if "Idempotent-Replayed" in response.get("headers", {})
    }
    assert with_header == replayed
    assert operation["responses"]["409"]
