"""The events orders/services.py records, as /api/v2/webhook-event-types describes them: the JSON
Schema (2020-12) of each one's `data`, and an example. Registered by
OrdersConfig.ready; tests/webhooks/test_event_type_schemas.py records each through its emitter
and validates the stored `data` against this schema."""

from events.registry import event_type_describe

JSON_SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema"

ORDER_COMPLETED = {
    "$schema": JSON_SCHEMA_2020_12,
    "type": "object",
    "properties": {
        "total_cents": {
            "type": "integer",
            "minimum": 0,
            "description": "The order's total after discounts, in minor units.",
        },
        "currency": {
            "type": "string",
            "pattern": "^[A-Z]{3}$",
            "description": "ISO 4217 code.",
        },
    },
    "required": ["total_cents", "currency"],
    "additionalProperties": False,
}


def register() -> None:
    event_type_describe(
        "order.completed",
        schema=ORDER_COMPLETED,
        example={"total_cents": 4599, "currency": "EUR"},
    )
