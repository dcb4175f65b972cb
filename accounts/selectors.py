from datetime import timedelta

from accounts.identity import bearer_token_hash
from accounts.models import ApiKey

API_KEY_PREFIX = "sf_"
# last_used_at is refreshed at most this often, to keep writes off the hot path.
LAST_USED_RESOLUTION = timedelta(minutes=1)

api_key_hash = bearer_token_hash


def api_key_live(*, key_hash: str) -> ApiKey | None:
    """The unrevoked key with this hash of an active user, its user attached (without the
    password hash, which stays deferred). Read only when the process has no current identity
    for it (accounts/identity.py)."""
    return (
        ApiKey.objects.select_related("user")
        .defer("user__password")
        .filter(key_hash=key_hash, revoked_at__isnull=True, user__is_active=True)
        .first()
    )


def api_key_selected_store_ids(*, api_key: ApiKey) -> frozenset[int]:
    """The stores a "selected" key may use (none asked for an "all" key)."""
    if api_key.store_access != ApiKey.STORE_ACCESS_SELECTED:
        return frozenset()
    return frozenset(api_key.stores.values_list("id", flat=True))
