from events.models import Event


def event_resource(event: Event) -> dict:
    """The Event (v2) resource: the journal's items and the body of webhook deliveries."""
    return {
        "id": event.id,
        "type": event.type,
        "version": event.version,
        "store_id": str(event.store_id),
        "occurred_at": event.occurred_at.isoformat().replace("+00:00", "Z"),
        "subject": {"type": event.subject_type, "id": event.subject_id},
        "data": event.data,
    }
