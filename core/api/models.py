from django.conf import settings
from django.db import models
from django.utils import timezone


class IdempotencyKey(models.Model):
    """One intended operation of a user: claimed in flight, then its stored outcome."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    operation = models.CharField(max_length=64)
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)
    # Null while the first request is still in flight.
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "operation", "key"],
                name="idempotency_key_unique_per_user_operation",
            ),
        ]

    def __str__(self):
        return f"{self.operation}:{self.key}"
