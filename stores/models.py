from django.conf import settings
from django.db import models
from django.utils import timezone

from accounts.abilities import ROLE_ADMIN, ROLE_OWNER, ROLE_STAFF


class Store(models.Model):
    VISIBILITY_PUBLIC = "PUBLIC"

    name = models.CharField(max_length=255)
    slug = models.SlugField(max_length=63, unique=True)
    visibility = models.CharField(max_length=16, default=VISIBILITY_PUBLIC)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="stores"
    )

    def __str__(self):
        return self.slug


class Membership(models.Model):
    ROLE_CHOICES = [(ROLE_OWNER, "Owner"), (ROLE_ADMIN, "Admin"), (ROLE_STAFF, "Staff")]

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=8, choices=ROLE_CHOICES)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "store"], name="membership_unique_user_store"),
        ]

    def __str__(self):
        return f"{self.user} is {self.role} of {self.store}"
