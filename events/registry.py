"""The one registry of event types: the journal validates against it and
/api/v2/webhook-event-types lists it."""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class EventType:
    type: str
    version: int
    description: str
    subject_type: str
    # JSON-schema-like description of `data`: field name -> python type.
    data_schema: dict[str, type] = field(default_factory=dict)
    # A `data` of this type: the body of a webhook channel's test send (issue 31).
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
            {"total_cents": 4599, "currency": "EUR"},
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
