import secrets
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from accounts.abilities import GRANTABLE_ABILITIES
from accounts.identity import identity_changed
from accounts.models import ApiKey, User
from accounts.selectors import API_KEY_PREFIX, api_key_hash
from core.api.errors import ValidationFailed


def api_key_expiry_validate(expires_at: datetime | None) -> datetime | None:
    """An expiry is optional and, when given, aware and in the future."""
    if expires_at is None:
        return None
    if timezone.is_naive(expires_at):
        raise ValidationFailed.field("expires_at", "must include a time zone")
    if expires_at <= timezone.now():
        raise ValidationFailed.field("expires_at", "must be in the future")
    return expires_at


def api_key_create(
    *,
    user: User,
    name: str,
    abilities: list[str],
    store_access: str = ApiKey.STORE_ACCESS_ALL,
    stores=(),
    current_store=None,
    expires_at: datetime | None = None,
) -> tuple[ApiKey, str]:
    """Creates a key and returns it with its secret, which is never stored or shown again."""
    api_key_expiry_validate(expires_at)
    unknown = sorted(set(abilities) - set(GRANTABLE_ABILITIES))
    if unknown:
        raise ValidationFailed.field("abilities", f"unknown abilities: {', '.join(unknown)}")
    if store_access not in {ApiKey.STORE_ACCESS_ALL, ApiKey.STORE_ACCESS_SELECTED}:
        raise ValidationFailed.field("store_access", "must be 'all' or 'selected'")
    secret = API_KEY_PREFIX + secrets.token_urlsafe(30)[:40]
    with transaction.atomic():
        key = ApiKey.objects.create(
            user=user,
            name=name,
            prefix=secret[:9],
            key_hash=api_key_hash(secret),
            abilities=list(abilities),
            store_access=store_access,
            current_store=current_store,
            expires_at=expires_at,
        )
        if stores:
            key.stores.set(stores)
    return key, secret


def api_key_revoke(*, api_key: ApiKey) -> None:
    """Revokes the key: refused from the next request on, on every process."""
    ApiKey.objects.filter(pk=api_key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    # update() sends no signal (accounts/identity.py).
    identity_changed(token_hashes=[api_key.key_hash])
