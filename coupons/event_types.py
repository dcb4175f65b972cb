"""The events coupons/services.py records, as /api/v2/webhook-event-types describes them: the
JSON Schema (2020-12) of each one's `data`, and an example. Registered by
CouponsConfig.ready; tests/webhooks/test_event_type_schemas.py records each through its emitter
and validates the stored `data` against this schema."""

from events.registry import event_type_describe

JSON_SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema"

# The coupon events carry no data: the subject names the coupon (read it from the coupon API).
EMPTY = {
    "$schema": JSON_SCHEMA_2020_12,
    "type": "object",
    "properties": {},
    "additionalProperties": False,
    "description": "Empty: `subject.id` names the coupon.",
}


def register() -> None:
    for type_name in ("coupon.created", "coupon.updated", "coupon.deleted"):
        event_type_describe(type_name, schema=EMPTY, example={})
