"""The one registry of event types: the journal validates against it and
/api/v2/webhook-event-types lists it.

The names are here (serializers take them as choices when imported); each type's JSON Schema
of `data` and its example live beside its emitter (coupons/event_types.py,
orders/event_types.py), which describes its types from its AppConfig.ready: events/ sits
below coupons/ and orders/ and imports neither.
"""

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class EventType:
    type: str
    version: int
    description: str
    subject_type: str
    # JSON-schema-like description of `data`: field name -> python type.
    data_schema: dict[str, type] = field(default_factory=dict)
    # JSON Schema (2020-12) of `data`, and a `data` valid against it (a channel's test send
    # sends it): set by the emitter's app (event_type_describe).
    schema: dict = field(default_factory=dict)
    example: dict = field(default_factory=dict)


EVENT_TYPES: dict[str, EventType] = {
    t.type: t
    for t in [
        EventType(
            "order.completed",
            1,
            "An order completed and delivery began.",
            "order",
            {"total_cents": int, "currency": str},
        ),
        EventType("coupon.created", 1, "A coupon was created.", "coupon"),
        EventType("coupon.updated", 1, "A coupon was changed.", "coupon"),
        EventType("coupon.deleted", 1, "A coupon was deleted.", "coupon"),
    ]
}
SUBJECT_TYPES = frozenset(t.subject_type for t in EVENT_TYPES.values())


def event_type_get(type_name: str) -> EventType:
    try:
        return EVENT_TYPES[type_name]
    except KeyError:
        raise LookupError(f"unknown event type {type_name!r}") from None


def event_type_describe(type_name: str, *, schema: dict, example: dict) -> None:
    """Sets a registered type's schema and example (called from the emitter's AppConfig.ready)."""
    EVENT_TYPES[type_name] = replace(event_type_get(type_name), schema=schema, example=example)
