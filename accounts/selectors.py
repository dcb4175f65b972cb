import hashlib
from datetime import UTC, timedelta

from django.db.models import Q
from django.utils import timezone
from rest_framework.exceptions import AuthenticationFailed

from accounts.credentials import CREDENTIAL_API_KEY, Credential
from accounts.models import ApiKey, User

API_KEY_PREFIX = "sf_"
# last_used_at is refreshed at most this often, to keep writes off the hot path.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def api_key_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def credential_for_api_key(token: str) -> tuple[User, Credential] | None:
    """Bearer resolver for API keys: (user, credential), or None when not a live key.

    An expired key raises AuthenticationFailed (401) saying so: only the holder of the secret
    learns it, and "expired" tells them to issue a new key rather than hunt for a typo.
    """
    if not token.startswith(API_KEY_PREFIX):
        return None
    try:
        # get(), not first(): the hash is unique, and first() would add an ORDER BY to compile.
        key = ApiKey.objects.select_related("user").get(
            key_hash=api_key_hash(token), revoked_at__isnull=True, user__is_active=True
        )
    except ApiKey.DoesNotExist:
        return None
    now = timezone.now()
    if key.is_expired(now):
        raise AuthenticationFailed(
            f"This API key expired at {key.expires_at.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}; "
            "issue a new key."
        )
    if key.last_used_at is None or key.last_used_at < now - LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
        ).update(last_used_at=now)
    selected = (
        frozenset(key.stores.values_list("id", flat=True))
        if key.store_access == ApiKey.STORE_ACCESS_SELECTED
        else frozenset()
    )
    credential = Credential(
        type=CREDENTIAL_API_KEY,
        user_id=key.user_id,
        abilities=tuple(key.abilities),
        store_access=key.store_access,
        selected_store_ids=selected,
        current_store_id=key.current_store_id,
        current_store_deleted=key.current_store_deleted_at is not None,
        rate_limit_key=f"api_key:{key.pk}",
        api_key_id=key.pk,
    )
    return key.user, credential
