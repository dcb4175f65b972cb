from django.db import connection
from django.db.models import QuerySet

from accounts.credentials import Credential
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
    with connection.cursor() as cursor:
        _FOR_SLUG.execute(cursor, {"user": credential.user_id, "slug": slug.lower()})
        row = cursor.fetchone()
    membership = None if row is None else membership_from_row(row)
    if membership is None or not credential.may_access_store(membership.store_id):
        return None
    return membership


# Run on every request with X-STORE, as a statement of plain SQL prepared once per database
# session (config/db.py): with the ORM's select_related query a request took 1.5 times the CPU
# (docs/benchmarks/layer.md "Fast paths (issue 22)"). The membership without X-STORE is read
# with the API key, in the same statement (stores.credentials).
_MEMBERSHIP_FIELDS = [f.attname for f in Membership._meta.concrete_fields]
_STORE_FIELDS = [f.attname for f in Store._meta.concrete_fields]
MEMBERSHIP_COLUMNS = ", ".join(
    [
        *(f'm."{f.column}"' for f in Membership._meta.concrete_fields),
        *(f's."{f.column}"' for f in Store._meta.concrete_fields),
    ]
)
_FOR_SLUG = PreparedStatement(
    "storefront_membership_for_slug",
    f"""
    SELECT {MEMBERSHIP_COLUMNS}
    FROM {Membership._meta.db_table} m JOIN {Store._meta.db_table} s ON s.id = m.store_id
    WHERE m.user_id = %(user)s AND s.slug = %(slug)s
    """,  # noqa: S608 (names from model metadata; values are parameters)
)


def membership_from_row(row: tuple) -> Membership | None:
    """The membership (store attached) of `row`, MEMBERSHIP_COLUMNS' values; None when they are
    all NULL (an outer join that found none)."""
    if row[0] is None:
        return None
    membership = Membership.from_db("default", _MEMBERSHIP_FIELDS, row[: len(_MEMBERSHIP_FIELDS)])
    membership.store = Store.from_db("default", _STORE_FIELDS, row[len(_MEMBERSHIP_FIELDS) :])
    return membership
