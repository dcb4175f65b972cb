from django.db import transaction

from events.models import Event
from events.registry import event_type_get


def record(*, store, type: str, subject, data: dict | None = None) -> Event:
    """The single writer of the journal: call it inside the transaction of the change.

    `subject` is a model instance (its `_meta.model_name` and pk name it) or a
    `(subject_type, subject_id)` pair.
    """
    event_type = event_type_get(type)
    if isinstance(subject, tuple):
        subject_type, subject_id = subject
    else:
        subject_type, subject_id = subject._meta.model_name, subject.pk
    if subject_type != event_type.subject_type:
        raise ValueError(f"{type} events are about a {event_type.subject_type}")
    data = dict(data or {})
    for name, kind in event_type.data_schema.items():
        if not isinstance(data.get(name), kind):
            raise ValueError(f"{type} needs data[{name!r}] of type {kind.__name__}")
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("events.record must run inside the transaction of the change")
    return Event.objects.create(
        store=store,
        type=event_type.type,
        version=event_type.version,
        subject_type=subject_type,
        subject_id=str(subject_id),
        data=data,
    )
