from django.db import connection
from django.db.models import QuerySet

from accounts.credentials import Credential
from accounts.rows import instance_from_row, select_list
from stores.models import Membership, Store


def stores_accessible(*, credential: Credential) -> QuerySet[Store]:
    """Stores the credential may act on: the user's memberships, narrowed by the key's access."""
    stores = Store.objects.filter(memberships__user_id=credential.user_id)
    if credential.store_access != "all":
        stores = stores.filter(id__in=credential.selected_store_ids)
    return stores.order_by("id")


def membership_first(*, credential: Credential) -> Membership | None:
    """The membership in the credential's first accessible store (lowest store id): the store
    an API key without X-STORE or a current store acts on. One query, store included."""
    if credential.store_access == "all":
        return _membership_where("m.user_id = %s ORDER BY m.store_id", [credential.user_id])
    return _membership_where(
        "m.user_id = %s AND m.store_id = ANY(%s) ORDER BY m.store_id",
        [credential.user_id, list(credential.selected_store_ids)],
    )


def membership_for(*, credential: Credential, store_id: int) -> Membership | None:
    """The membership through which the credential acts in a store, checked on every request."""
    if not credential.may_access_store(store_id):
        return None
    return _membership_where("m.user_id = %s AND m.store_id = %s", [credential.user_id, store_id])


def _could_be_a_slug(value: str) -> bool:
    # Cheap shape check first: a NUL byte in a header would otherwise reach PostgreSQL (500).
    return 0 < len(value) <= 63 and value.isascii() and value.replace("-", "").isalnum()


def membership_for_slug(*, credential: Credential, slug: str) -> Membership | None:
    if not _could_be_a_slug(slug):
        return None
    membership = _membership_where(
        "m.user_id = %s AND s.slug = %s", [credential.user_id, slug.lower()]
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


def _membership_where(condition: str, params: list) -> Membership | None:
    """The first membership matching `condition`, its store attached, in plain SQL: one of
    these runs on every store-scoped request, and the ORM's select_related().first() cost
    about a millisecond more of Python per request (docs/benchmarks/layer.md)."""
    with connection.cursor() as cursor:
        cursor.execute(f"{_MEMBERSHIP_WITH_STORE_SQL} {condition} LIMIT 1", params)
        row = cursor.fetchone()
    if row is None:
        return None
    membership = instance_from_row(Membership, row[:_MEMBERSHIP_FIELD_COUNT])
    membership.store = instance_from_row(Store, row[_MEMBERSHIP_FIELD_COUNT:])
    return membership
