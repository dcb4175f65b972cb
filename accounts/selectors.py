import hashlib
import json
from datetime import UTC, timedelta

from django.db import connection
from django.db.models import Q
from django.utils import timezone
from rest_framework.exceptions import AuthenticationFailed

from accounts.credentials import CREDENTIAL_API_KEY, Credential
from accounts.models import ApiKey, User
from config.db import PreparedStatement

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
    with connection.cursor() as cursor:
        _LIVE_API_KEY_STATEMENT.execute(cursor, [api_key_hash(token)])
        row = cursor.fetchone()
    if row is None:
        return None
    key_id, abilities, store_access, current_store_id, current_store_deleted_at = row[:5]
    expires_at, last_used_at, selected_store_ids = row[5:8]
    user = User.from_db("default", _USER_FIELDS_READ, row[8:])
    now = timezone.now()
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
        user_id=user.pk,
        # The raw cursor returns jsonb as text (Django's JSONField parses it in from_db_value).
        abilities=tuple(json.loads(abilities)),
        store_access=store_access,
        selected_store_ids=frozenset(selected_store_ids),
        current_store_id=current_store_id,
        current_store_deleted=current_store_deleted_at is not None,
        rate_limit_key=f"api_key:{key_id}",
        api_key_id=key_id,
    )
    return user, credential


# The bearer path never reads the password hash: it stays deferred (loaded only if read).
_USER_FIELDS_READ = [f.attname for f in User._meta.concrete_fields if f.attname != "password"]
# The unrevoked key of an active user, its selected stores (empty unless store_access is
# "selected") and its user, in one statement of plain SQL prepared once per database session
# (config/db.py): it runs on every request, which took 1.4 times the CPU with the ORM's queries,
# and 1.25 times unprepared (docs/benchmarks/layer.md "Fast paths (issue 22)").
_LIVE_API_KEY_STATEMENT = PreparedStatement(
    "storefront_live_api_key",
    f"""
    SELECT k.id, k.abilities, k.store_access, k.current_store_id, k.current_store_deleted_at,
           k.expires_at, k.last_used_at,
           ARRAY(SELECT ks.store_id FROM {ApiKey.stores.through._meta.db_table} ks
                 WHERE ks.apikey_id = k.id AND k.store_access = '{ApiKey.STORE_ACCESS_SELECTED}'),
           {", ".join(f'u."{User._meta.get_field(name).column}"' for name in _USER_FIELDS_READ)}
    FROM {ApiKey._meta.db_table} k JOIN {User._meta.db_table} u ON u.id = k.user_id
    WHERE k.key_hash = %s AND k.revoked_at IS NULL AND u.is_active
    """,  # noqa: S608 (names from model metadata; values are parameters)
)
