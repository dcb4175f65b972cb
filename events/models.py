from django.db import models
from django.utils import timezone

from events.ids import new_event_id


class Event(models.Model):
    """An integration event, written by `events.services.record` in the business transaction."""

    id = models.CharField(primary_key=True, max_length=30, default=new_event_id, editable=False)
    store = models.ForeignKey("stores.Store", on_delete=models.CASCADE, related_name="events")
    type = models.CharField(max_length=120)
    version = models.PositiveSmallIntegerField()
    subject_type = models.CharField(max_length=32)
    subject_id = models.CharField(max_length=100)
    data = models.JSONField(default=dict)
    occurred_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["occurred_at"], name="event_occurred_at_idx")]

    def __str__(self):
        return f"{self.type} {self.id}"
