from django.db.models import QuerySet

from accounts.credentials import Credential
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
    memberships = Membership.objects.select_related("store").filter(user_id=credential.user_id)
    if credential.store_access != "all":
        memberships = memberships.filter(store_id__in=credential.selected_store_ids)
    return memberships.order_by("store_id").first()


def membership_for(*, credential: Credential, store_id: int) -> Membership | None:
    """The membership through which the credential acts in a store, checked on every request."""
    if not credential.may_access_store(store_id):
        return None
    return (
        Membership.objects.select_related("store")
        .filter(user_id=credential.user_id, store_id=store_id)
        .first()
    )


def _could_be_a_slug(value: str) -> bool:
    # Cheap shape check first: a NUL byte in a header would otherwise reach PostgreSQL (500).
    return 0 < len(value) <= 63 and value.isascii() and value.replace("-", "").isalnum()


def membership_for_slug(*, credential: Credential, slug: str) -> Membership | None:
    if not _could_be_a_slug(slug):
        return None
    membership = (
        Membership.objects.select_related("store")
        .filter(user_id=credential.user_id, store__slug=slug.lower())
        .first()
    )
    if membership is None or not credential.may_access_store(membership.store_id):
        return None
    return membership
