from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models
from django.utils import timezone


class User(AbstractUser):
    """The account. Custom from the first migration so it can grow without a data migration."""

    email = models.EmailField("email address", blank=True)


def unpin_deleted_store(collector, field, sub_objs, using):
    """on_delete of ApiKey.current_store: clears the pin and records when its store was deleted.

    SET_NULL alone would make the key fall back to its first accessible store, silently moving
    an integration to another store; the record makes stores.access refuse it (403) until a
    new current store is chosen. `sub_objs` is evaluated (no `lazy_sub_objs`), so both
    updates go by primary key and neither depends on the other's order.
    """
    collector.add_field_update(
        field.model._meta.get_field("current_store_deleted_at"), timezone.now(), sub_objs
    )
    collector.add_field_update(field, None, sub_objs)


class ApiKey(models.Model):
    """A secret for custom integrations: stored as a SHA-256 hash, shown once at creation."""

    STORE_ACCESS_ALL = "all"
    STORE_ACCESS_SELECTED = "selected"
    STORE_ACCESS_CHOICES = [
        (STORE_ACCESS_ALL, "All stores of the user"),
        (STORE_ACCESS_SELECTED, "Selected stores only"),
    ]

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12, help_text="Visible start of the key, for humans.")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    abilities = models.JSONField(default=list)
    store_access = models.CharField(
        max_length=8, choices=STORE_ACCESS_CHOICES, default=STORE_ACCESS_ALL
    )
    stores = models.ManyToManyField(
        "stores.Store",
        blank=True,
        related_name="+",
        help_text="The stores a 'selected' key may use.",
    )
    current_store = models.ForeignKey(
        "stores.Store", null=True, blank=True, on_delete=unpin_deleted_store, related_name="+"
    )
    current_store_deleted_at = models.DateTimeField(
        null=True,
        blank=True,
        editable=False,
        help_text="When the key's current store was deleted. Until a new current store is "
        "chosen, requests without X-STORE are refused (403).",
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="Refused (401) from this time on; empty: never expires."
    )
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"
