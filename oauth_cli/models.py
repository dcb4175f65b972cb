"""The CLI connection of a user (Installation) and the token families it holds.

Tokens, codes and the application are django-oauth-toolkit's own models; these two add what
the grant model `account` needs: one connection per user and client, and for every code
exchange a family record that bounds the family's lifetime and detects code replay.
"""

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone
from oauth2_provider.settings import oauth2_settings


class Installation(models.Model):
    """The user's CLI connection: exists from consent until disconnected (then deleted)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oauth_installations"
    )
    application = models.ForeignKey(
        oauth2_settings.APPLICATION_MODEL,
        on_delete=models.CASCADE,
        related_name="installations",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "application"], name="oauth_installation_one_per_user_client"
            )
        ]

    def __str__(self):
        return f"Installation {self.id} ({self.user})"


class TokenFamily(models.Model):
    """One authorization-code exchange and every refresh rotation descending from it.

    `id` equals DOT's `RefreshToken.token_family`. `code_checksum` is the SHA-256 of the
    redeemed code, so a replayed code finds the family to revoke (RFC 9700 §4.5).
    """

    id = models.UUIDField(primary_key=True, editable=False)
    installation = models.ForeignKey(
        Installation, on_delete=models.CASCADE, related_name="token_families"
    )
    code_checksum = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "token families"
        indexes = [models.Index(fields=["expires_at"])]

    def __str__(self):
        return f"Token family {self.id}"

    @property
    def is_live(self) -> bool:
        return self.revoked_at is None and self.expires_at > timezone.now()
