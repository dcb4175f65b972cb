from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models.signals import post_delete, post_save, pre_delete
from django.utils import timezone

from accounts.abilities import ROLE_OWNER
from accounts.identity import identity_changed
from accounts.models import ApiKey, User
from core.api.errors import RateLimited, ValidationFailed
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


# Identities kept per process (accounts/identity.py) hold memberships and their stores: every
# write of either advances the epochs of the users it concerns, whichever code makes it (these
# services, the admin's store and membership pages, a cascade).


def _membership_changed(sender, instance, **kwargs):
    identity_changed(user_ids=[instance.user_id])


def _store_saved(sender, instance, created, **kwargs):
    if not created:  # a new store has no member yet; its first membership advances its user
        identity_changed(user_ids=_users_of_store(instance))


def _store_deleted(sender, instance, **kwargs):
    # Before the delete: afterwards neither the memberships nor the keys' pins are there.
    identity_changed(user_ids=_users_of_store(instance))


def _users_of_store(store: Store) -> set[int]:
    members = Membership.objects.filter(store=store).values_list("user_id", flat=True)
    pinned = ApiKey.objects.filter(current_store=store).values_list("user_id", flat=True)
    return {*members, *pinned}


def connect_receivers() -> None:
    """Called by StoresConfig.ready."""
    for signal in (post_save, post_delete):
        signal.connect(_membership_changed, sender=Membership, dispatch_uid=f"identity_m_{signal}")
    post_save.connect(_store_saved, sender=Store, dispatch_uid="identity_store_saved")
    pre_delete.connect(_store_deleted, sender=Store, dispatch_uid="identity_store_deleted")
