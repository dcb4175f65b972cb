"""The bearer resolver for API keys (BEARER_CREDENTIAL_RESOLVERS): the key, its user and its
selected stores, and on a request without X-STORE also the membership it acts through, in one
statement of plain SQL prepared once per database session (config/db.py).

It lives in stores, not accounts, because that membership is read in the same statement: a
request without X-STORE makes one database round trip for its credential and its store, and one
naming its store by X-STORE reads no membership here (stores.access reads the named one). Both
gains are measured in docs/benchmarks/layer.md "Fast paths (issue 22)".
"""

import json
from datetime import UTC

from django.db import connection
from django.db.models import Q
from django.utils import timezone
from rest_framework.exceptions import AuthenticationFailed

from accounts.credentials import CREDENTIAL_API_KEY, Credential
from accounts.models import ApiKey, User
from accounts.selectors import API_KEY_PREFIX, LAST_USED_RESOLUTION, api_key_hash
from config.db import PreparedStatement
from stores.access import named_store_slug
from stores.models import Membership, Store
from stores.selectors import MEMBERSHIP_COLUMNS, membership_from_row


def credential_for_api_key(token: str, request) -> tuple[User, Credential] | None:
    """Bearer resolver for API keys: (user, credential), or None when not a live key.

    An expired key raises AuthenticationFailed (401) saying so: only the holder of the secret
    learns it, and "expired" tells them to issue a new key rather than hunt for a typo.
    """
    if not token.startswith(API_KEY_PREFIX):
        return None
    reads_default_membership = named_store_slug(request) is None
    statement = _WITH_DEFAULT_MEMBERSHIP if reads_default_membership else _KEY_ONLY
    with connection.cursor() as cursor:
        statement.execute(cursor, [api_key_hash(token)])
        row = cursor.fetchone()
    if row is None:
        return None
    key_id, abilities, store_access, current_store_id, current_store_deleted_at = row[:5]
    expires_at, last_used_at, selected_store_ids = row[5:8]
    user_end = 8 + len(_USER_FIELDS_READ)
    user = User.from_db("default", _USER_FIELDS_READ, row[8:user_end])
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
        default_membership=membership_from_row(row[user_end:])
        if reads_default_membership
        else None,
    )
    return user, credential


# The bearer path never reads the password hash: it stays deferred (loaded only if read).
_USER_FIELDS_READ = [f.attname for f in User._meta.concrete_fields if f.attname != "password"]
# The unrevoked key of an active user, its selected stores (empty unless store_access is
# "selected") and its user: with the ORM's queries the layer took 1.4 times the CPU, and 1.25
# times unprepared (docs/benchmarks/layer.md "Fast paths (issue 22)").
_KEY_SELECT = f"""
    SELECT k.id, k.abilities, k.store_access, k.current_store_id, k.current_store_deleted_at,
           k.expires_at, k.last_used_at,
           ARRAY(SELECT ks.store_id FROM {ApiKey.stores.through._meta.db_table} ks
                 WHERE ks.apikey_id = k.id AND k.store_access = '{ApiKey.STORE_ACCESS_SELECTED}'),
           {", ".join(f'u."{User._meta.get_field(name).column}"' for name in _USER_FIELDS_READ)}
"""  # noqa: S608 (names from model metadata; values are parameters)
_KEY_FROM = f"FROM {ApiKey._meta.db_table} k JOIN {User._meta.db_table} u ON u.id = k.user_id"
_KEY_WHERE = "WHERE k.key_hash = %s AND k.revoked_at IS NULL AND u.is_active"
_KEY_ONLY = PreparedStatement("storefront_live_api_key", f"{_KEY_SELECT} {_KEY_FROM} {_KEY_WHERE}")
# The membership a key acts through without X-STORE (spec "Authentication" rule 2): in its
# current store if it has one, never another (stores.access refuses when there is none), else in
# the first (lowest id) store it may access; a "selected" key only in its selected stores. The
# one place this rule is written. It reads the key's columns from the row `k` (a LATERAL), so
# PostgreSQL keeps one plan for the statement.
_WITH_DEFAULT_MEMBERSHIP = PreparedStatement(
    "storefront_live_api_key_default_membership",
    f"""
    {_KEY_SELECT}, default_membership.*
    {_KEY_FROM}
    LEFT JOIN LATERAL (
        SELECT {MEMBERSHIP_COLUMNS}
        FROM {Membership._meta.db_table} m JOIN {Store._meta.db_table} s ON s.id = m.store_id
        WHERE m.user_id = k.user_id
          AND (k.current_store_id IS NULL OR m.store_id = k.current_store_id)
          AND (k.store_access = '{ApiKey.STORE_ACCESS_ALL}' OR m.store_id IN (
              SELECT ks.store_id FROM {ApiKey.stores.through._meta.db_table} ks
              WHERE ks.apikey_id = k.id))
        ORDER BY m.store_id LIMIT 1
    ) default_membership ON TRUE
    {_KEY_WHERE}
    """,  # noqa: S608 (names from model metadata; values are parameters)
)
