"""The body of every webhook: the Event (v2) resource and `test`, for a journal event and for a
channel's test event alike, from this one builder so that the two cannot differ in shape."""

import json

from events.models import Event
from events.serializers import event_resource


def webhook_body(event: Event, *, test: bool) -> bytes:
    """`event` may be unsaved (a test event is never journaled)."""
    resource = {**event_resource(event), "test": test}
    return json.dumps(resource, separators=(",", ":")).encode()
