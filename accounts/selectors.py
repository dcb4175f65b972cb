import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, timedelta

from django.db import connection
from django.db.models import Q
from django.utils import timezone
from rest_framework.exceptions import AuthenticationFailed

from accounts.credentials import CREDENTIAL_API_KEY, Credential
from accounts.models import ApiKey, User
from accounts.rows import instance_from_row, select_list
from config.db import PreparedStatement
from stores.models import Membership
from stores.selectors import (
    API_KEY_DEFAULT_MEMBERSHIP_LATERAL,
    MEMBERSHIP_WITH_STORE_COLUMNS,
    membership_from_row,
)

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
    if connection.vendor == "postgresql":
        key = _live_api_key(api_key_hash(token))
    else:
        key = _live_api_key_by_orm(api_key_hash(token))
    if key is None:
        return None
    now = timezone.now()
    key_id, expires_at, last_used_at = key.id, key.expires_at, key.last_used_at
    if expires_at is not None and expires_at <= now:
        raise AuthenticationFailed(
            f"This API key expired at {expires_at.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}; "
            "issue a new key."
        )
    if last_used_at is None or last_used_at < now - LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key_id).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
        ).update(last_used_at=now)
    credential = Credential(
        type=CREDENTIAL_API_KEY,
        user_id=key.user.pk,
        abilities=tuple(key.abilities),
        store_access=key.store_access,
        selected_store_ids=frozenset(key.selected_store_ids),
        current_store_id=key.current_store_id,
        current_store_deleted=key.current_store_deleted_at is not None,
        rate_limit_key=f"api_key:{key_id}",
        api_key_id=key_id,
        default_membership=key.default_membership,
    )
    return key.user, credential


@dataclass(frozen=True)
class _LiveApiKey:
    id: int
    abilities: list
    store_access: str
    current_store_id: int | None
    current_store_deleted_at: object
    expires_at: object
    last_used_at: object
    selected_store_ids: list
    user: User
    default_membership: Membership | None


def _live_api_key(key_hash: str) -> _LiveApiKey | None:
    row = _live_api_key_row(key_hash)
    if row is None:
        return None
    key_id, abilities, store_access, current_store_id, current_store_deleted_at = row[:5]
    expires_at, last_used_at, selected_store_ids = row[5:8]
    user_row_end = len(row) - MEMBERSHIP_WITH_STORE_COLUMNS
    return _LiveApiKey(
        id=key_id,
        # The raw cursor returns jsonb as text (Django's JSONField parses it in from_db_value).
        abilities=json.loads(abilities),
        store_access=store_access,
        current_store_id=current_store_id,
        current_store_deleted_at=current_store_deleted_at,
        expires_at=expires_at,
        last_used_at=last_used_at,
        selected_store_ids=selected_store_ids,
        user=instance_from_row(User, row[8:user_row_end], exclude=_USER_FIELDS_NOT_READ),
        default_membership=membership_from_row(row[user_row_end:]),
    )


def _live_api_key_by_orm(key_hash: str) -> _LiveApiKey | None:
    """The same reads through the ORM, for the SQLite database of `make run`: the one-query
    path above is PostgreSQL's (LATERAL, ARRAY, jsonb), and SQLite's raw rows would carry naive
    datetimes."""
    key = (
        ApiKey.objects.select_related("user")
        .filter(key_hash=key_hash, revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if key is None:
        return None
    selected = (
        list(key.stores.values_list("id", flat=True))
        if key.store_access == ApiKey.STORE_ACCESS_SELECTED
        else []
    )
    memberships = Membership.objects.select_related("store").filter(user_id=key.user_id)
    if key.current_store_id is not None:
        memberships = memberships.filter(store_id=key.current_store_id)
    if key.store_access != ApiKey.STORE_ACCESS_ALL:
        memberships = memberships.filter(store_id__in=selected)
    return _LiveApiKey(
        id=key.id,
        abilities=key.abilities,
        store_access=key.store_access,
        current_store_id=key.current_store_id,
        current_store_deleted_at=key.current_store_deleted_at,
        expires_at=key.expires_at,
        last_used_at=key.last_used_at,
        selected_store_ids=selected,
        user=key.user,
        default_membership=memberships.order_by("store_id").first(),
    )


# The bearer path never reads the password hash: it stays deferred (loaded only if read).
_USER_FIELDS_NOT_READ = ("password",)
_LIVE_API_KEY_SQL = f"""
    SELECT k.id, k.abilities, k.store_access, k.current_store_id, k.current_store_deleted_at,
           k.expires_at, k.last_used_at,
           ARRAY(SELECT ks.store_id FROM {ApiKey.stores.through._meta.db_table} ks
                 WHERE ks.apikey_id = k.id AND k.store_access = %s),
           {select_list(User, "u", exclude=_USER_FIELDS_NOT_READ)},
           default_membership.*
    FROM {ApiKey._meta.db_table} k
    JOIN {User._meta.db_table} u ON u.id = k.user_id
    {API_KEY_DEFAULT_MEMBERSHIP_LATERAL}
    WHERE k.key_hash = %s AND k.revoked_at IS NULL AND u.is_active
"""  # noqa: S608 (names from model metadata; values are parameters)
_LIVE_API_KEY_STATEMENT = PreparedStatement("storefront_live_api_key", _LIVE_API_KEY_SQL)


def _live_api_key_row(key_hash: str) -> tuple | None:
    """The unrevoked key with `key_hash` of an active user, its selected stores (empty unless
    store_access is "selected"), its user and its membership without X-STORE, in one query of
    plain SQL: it runs on every request, and the ORM's version (select_related get, the stores
    query, the membership query) cost a millisecond more per request (docs/benchmarks/layer.md).
    Prepared once per session: planning it was 40% of its time (config/db.py)."""
    with connection.cursor() as cursor:
        _LIVE_API_KEY_STATEMENT.execute(cursor, [ApiKey.STORE_ACCESS_SELECTED, key_hash])
        return cursor.fetchone()
