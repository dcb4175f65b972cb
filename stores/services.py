from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.abilities import ROLE_OWNER
from accounts.models import User
from config.api.errors import RateLimited, ValidationFailed
from stores.models import Membership, Store

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


def store_slug_check_not_reserved(slug: str) -> None:
    """The slug's format is the serializer's (stores.serializers.StoreSlugField)."""
    if slug in RESERVED_SLUGS:
        raise ValidationFailed.field("slug", "is reserved")


def store_create(*, user: User, name: str, slug: str) -> Store:
    """Creates a store owned by `user`; at most one new store per user per interval.

    `name` and `slug` arrive in the format StoreCreateSerializer checks (slug lower-cased);
    this keeps the rules that need the database or the user's lock.
    """
    store_slug_check_not_reserved(slug)
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
