from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models
from django.utils import timezone


class User(AbstractUser):
    """The account. Custom from the first migration so it can grow without a data migration."""

    email = models.EmailField("email address", blank=True)


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
        "stores.Store", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
