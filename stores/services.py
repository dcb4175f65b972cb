import re
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.abilities import ROLE_OWNER
from accounts.models import User
from config.api.errors import RateLimited, ValidationFailed
from stores.models import Membership, Store

SLUG_PATTERN = re.compile(r"^[a-z0-9](?:[a-z0-9-]{1,61})[a-z0-9]$")
RESERVED_SLUGS = frozenset(
    {
        "api",
        "www",
        "cdn",
        "admin",
        "app",
        "dashboard",
        "static",
        "mail",
        "media",
        "assets",
        "help",
        "support",
        "status",
        "docs",
        "blog",
        "auth",
        "oauth",
        "login",
        "account",
        "accounts",
        "billing",
        "store",
        "stores",
        "shop",
        "storefront",
        "webhooks",
        "ftp",
        "smtp",
        "root",
        "system",
        "internal",
        "test",
        "staging",
        "dev",
    }
)


def store_slug_validate(slug: str) -> str:
    raw = slug or ""
    slug = raw.lower()
    if not 3 <= len(raw) <= 63:
        raise ValidationFailed.field("slug", "must be 3 to 63 characters long")
    # isascii: str.lower() folds some non-ASCII letters (the Kelvin sign) into ASCII ones.
    if not raw.isascii() or not SLUG_PATTERN.match(slug):
        raise ValidationFailed.field(
            "slug", "may contain only a-z, 0-9 and '-', and may not start or end with '-'"
        )
    if slug in RESERVED_SLUGS:
        raise ValidationFailed.field("slug", "is reserved")
    return slug


def store_create(*, user: User, name: str, slug: str) -> Store:
    """Creates a store owned by `user`; at most one new store per user per interval."""
    slug = store_slug_validate(slug)
    name = name or ""
    if not 1 <= len(name) <= 255:
        raise ValidationFailed.field("name", "must be 1 to 255 characters long")
    if not name.strip():
        raise ValidationFailed.field("name", "may not be blank")
    if "\x00" in name:
        raise ValidationFailed.field("name", "may not contain NUL characters")
    interval = timedelta(seconds=settings.STORE_CREATION_INTERVAL_SECONDS)
    with transaction.atomic(durable=True):
        # Serialises one user's creations, whatever credential they come through.
        User.objects.select_for_update().only("id").get(pk=user.pk)
        now = timezone.now()
        last = Store.objects.filter(created_by=user).order_by("-created_at").first()
        if last is not None and last.created_at > now - interval:
            wait = (last.created_at + interval - now).total_seconds()
            raise RateLimited(int(wait) + 1, "At most one new store per minute; try later.")
        if Store.objects.filter(slug=slug).exists():
            raise ValidationFailed.field("slug", "is already taken")
        try:
            with transaction.atomic():
                store = Store.objects.create(name=name, slug=slug, created_by=user, created_at=now)
        except IntegrityError:
            raise ValidationFailed.field("slug", "is already taken") from None
        Membership.objects.create(user=user, store=store, role=ROLE_OWNER)
    return store
