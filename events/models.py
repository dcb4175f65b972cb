from django.db import models
from django.utils import timezone

from events.ids import new_event_id
from events.positions import CurrentTransactionId


class Event(models.Model):
    """An integration event, written by `events.services.record` in the business transaction.

    Its journal position is (txid, id); see events/positions.py.
    """

    id = models.CharField(primary_key=True, max_length=30, default=new_event_id, editable=False)
    store = models.ForeignKey("stores.Store", on_delete=models.CASCADE, related_name="events")
    type = models.CharField(max_length=120)
    version = models.PositiveSmallIntegerField()
    subject_type = models.CharField(max_length=32)
    subject_id = models.CharField(max_length=100)
    data = models.JSONField(default=dict)
    occurred_at = models.DateTimeField(default=timezone.now)
    txid = models.BigIntegerField(db_default=CurrentTransactionId(), editable=False)

    class Meta:
        indexes = [
            models.Index(fields=["occurred_at"], name="event_occurred_at_idx"),
            # Keyset access for every list: the whole journal, by type, by subject.
            models.Index(fields=["store", "txid", "id"], name="event_store_pos_idx"),
            models.Index(fields=["store", "type", "txid", "id"], name="event_store_type_pos_idx"),
            models.Index(
                fields=["store", "subject_type", "subject_id", "txid", "id"],
                name="event_store_subject_pos_idx",
            ),
        ]

    def __str__(self):
        return f"{self.type} {self.id}"


class EventPruneMark(models.Model):
    """The highest journal position retention has deleted in a store.

    A cursor positioned before it may have missed deleted events, so it answers 410.
    """

    store = models.OneToOneField(
        "stores.Store", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    txid = models.BigIntegerField()
    event_id = models.CharField(max_length=30)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return f"{self.store_id} pruned through ({self.txid}, {self.event_id})"
