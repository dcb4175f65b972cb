from django.db import connection
from django.db.models import QuerySet

from accounts.credentials import Credential
from accounts.models import ApiKey
from accounts.rows import instance_from_row, select_list
from config.db import PreparedStatement
from stores.models import Membership, Store


def stores_accessible(*, credential: Credential) -> QuerySet[Store]:
    """Stores the credential may act on: the user's memberships, narrowed by the key's access."""
    stores = Store.objects.filter(memberships__user_id=credential.user_id)
    if credential.store_access != "all":
        stores = stores.filter(id__in=credential.selected_store_ids)
    return stores.order_by("id")


def _could_be_a_slug(value: str) -> bool:
    # Cheap shape check first: a NUL byte in a header would otherwise reach PostgreSQL (500).
    return 0 < len(value) <= 63 and value.isascii() and value.replace("-", "").isalnum()


def membership_for_slug(*, credential: Credential, slug: str) -> Membership | None:
    if not _could_be_a_slug(slug):
        return None
    if connection.vendor == "postgresql":
        membership = _membership_for_slug(credential.user_id, slug.lower())
    else:  # SQLite (`make run`): its raw rows carry naive datetimes, the ORM converts them
        membership = (
            Membership.objects.select_related("store")
            .filter(user_id=credential.user_id, store__slug=slug.lower())
            .first()
        )
    if membership is None or not credential.may_access_store(membership.store_id):
        return None
    return membership


_MEMBERSHIP_WITH_STORE_SQL = f"""
    SELECT {select_list(Membership, "m")}, {select_list(Store, "s")}
    FROM {Membership._meta.db_table} m JOIN {Store._meta.db_table} s ON s.id = m.store_id
    WHERE
"""  # noqa: S608 (names from model metadata; values are parameters)
_MEMBERSHIP_FIELD_COUNT = len(Membership._meta.concrete_fields)
MEMBERSHIP_WITH_STORE_COLUMNS = _MEMBERSHIP_FIELD_COUNT + len(Store._meta.concrete_fields)

# The membership an API key acts through without X-STORE (spec "Authentication" rule 2): in its
# current store if it has one (never another: access.py refuses when this finds none), else in
# the first (lowest id) store it may access; a "selected" key only in its selected stores.
# A LATERAL subquery over the key row `k`, so the authenticating query reads it too
# (accounts.selectors) and a request without X-STORE makes one database round trip, not two.
API_KEY_DEFAULT_MEMBERSHIP_LATERAL = f"""
    LEFT JOIN LATERAL (
        SELECT {select_list(Membership, "m")}, {select_list(Store, "s")}
        FROM {Membership._meta.db_table} m JOIN {Store._meta.db_table} s ON s.id = m.store_id
        WHERE m.user_id = k.user_id
          AND (k.current_store_id IS NULL OR m.store_id = k.current_store_id)
          AND (k.store_access = '{ApiKey.STORE_ACCESS_ALL}' OR m.store_id IN (
              SELECT ks.store_id FROM {ApiKey.stores.through._meta.db_table} ks
              WHERE ks.apikey_id = k.id))
        ORDER BY m.store_id
        LIMIT 1
    ) default_membership ON TRUE
"""  # noqa: S608 (names from model metadata; values are parameters)


def membership_from_row(row: tuple) -> Membership | None:
    """The membership (store attached) of `row`: MEMBERSHIP_WITH_STORE_COLUMNS values in the
    order the queries here select them; None when the row is all NULL (no membership)."""
    if row[0] is None:
        return None
    membership = instance_from_row(Membership, row[:_MEMBERSHIP_FIELD_COUNT])
    membership.store = instance_from_row(Store, row[_MEMBERSHIP_FIELD_COUNT:])
    return membership


_MEMBERSHIP_FOR_SLUG_STATEMENT = PreparedStatement(
    "storefront_membership_for_slug",
    f"{_MEMBERSHIP_WITH_STORE_SQL} m.user_id = %s AND s.slug = %s LIMIT 1",
)


def _membership_for_slug(user_id: int, slug: str) -> Membership | None:
    """The user's membership in the store `slug`, its store attached, in plain SQL prepared once
    per session (config/db.py): this runs on every request with X-STORE, and the ORM's
    select_related().first() cost about a millisecond more of Python per request
    (docs/benchmarks/layer.md)."""
    with connection.cursor() as cursor:
        _MEMBERSHIP_FOR_SLUG_STATEMENT.execute(cursor, [user_id, slug])
        row = cursor.fetchone()
    return None if row is None else membership_from_row(row)
