from django.db import connection
from django.db.models import QuerySet

from accounts.credentials import Credential
from accounts.models import ApiKey
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
    """The credential's membership (store attached) in the store named by X-STORE."""
    if not _could_be_a_slug(slug):
        return None
    membership = _membership(_FOR_SLUG, {"user": credential.user_id, "slug": slug.lower()})
    if membership is None or not credential.may_access_store(membership.store_id):
        return None
    return membership


def membership_default(*, credential: Credential) -> Membership | None:
    """The membership (store attached) an API key acts through without X-STORE (spec
    "Authentication" rule 2): in its current store if it has one, never another (stores.access
    refuses when there is none), else in the first (lowest id) store it may access; a
    "selected" key only in its selected stores."""
    return _membership(_DEFAULT, {"key": credential.api_key_id})


# Both run on every store request, as statements of plain SQL prepared once per database
# session (config/db.py): with the ORM's select_related query a request took 1.5 times the CPU
# (docs/benchmarks/layer.md "Fast paths (issue 22)").
_MEMBERSHIP_FIELDS = [f.attname for f in Membership._meta.concrete_fields]
_STORE_FIELDS = [f.attname for f in Store._meta.concrete_fields]
_COLUMNS = ", ".join(
    [
        *(f'm."{f.column}"' for f in Membership._meta.concrete_fields),
        *(f's."{f.column}"' for f in Store._meta.concrete_fields),
    ]
)
_FOR_SLUG = PreparedStatement(
    "storefront_membership_for_slug",
    f"""
    SELECT {_COLUMNS}
    FROM {Membership._meta.db_table} m JOIN {Store._meta.db_table} s ON s.id = m.store_id
    WHERE m.user_id = %(user)s AND s.slug = %(slug)s
    """,  # noqa: S608 (names from model metadata; values are parameters)
)
# The key's columns are read again here, not passed in: as parameters, PostgreSQL planned each
# run anew for their values (a NULL current store folds away) instead of keeping one plan.
_DEFAULT = PreparedStatement(
    "storefront_membership_default",
    f"""
    SELECT {_COLUMNS}
    FROM {ApiKey._meta.db_table} k
    JOIN {Membership._meta.db_table} m ON m.user_id = k.user_id
    JOIN {Store._meta.db_table} s ON s.id = m.store_id
    WHERE k.id = %(key)s
      AND (k.current_store_id IS NULL OR m.store_id = k.current_store_id)
      AND (k.store_access = '{ApiKey.STORE_ACCESS_ALL}' OR m.store_id IN (
          SELECT ks.store_id FROM {ApiKey.stores.through._meta.db_table} ks
          WHERE ks.apikey_id = k.id))
    ORDER BY m.store_id LIMIT 1
    """,  # noqa: S608 (names from model metadata; values are parameters)
)


def _membership(statement: PreparedStatement, params: dict) -> Membership | None:
    with connection.cursor() as cursor:
        statement.execute(cursor, params)
        row = cursor.fetchone()
    if row is None:
        return None
    membership = Membership.from_db("default", _MEMBERSHIP_FIELDS, row[: len(_MEMBERSHIP_FIELDS)])
    membership.store = Store.from_db("default", _STORE_FIELDS, row[len(_MEMBERSHIP_FIELDS) :])
    return membership
