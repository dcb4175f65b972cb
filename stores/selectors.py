from django.db.models import QuerySet

from accounts.credentials import Credential
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
    """The credential's membership (store attached) in the store named by X-STORE. Read once
    per credential and slug while the credential's identity is current (stores.access)."""
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


def membership_default(*, credential: Credential) -> Membership | None:
    """The membership (store attached) an API key acts through without X-STORE (spec
    "Authentication" rule 2), the one place this rule is written: in its current store if it
    has one, never another (stores.access refuses when there is none), else in the first
    (lowest id) store it may access; a "selected" key only in its selected stores."""
    memberships = Membership.objects.select_related("store").filter(user_id=credential.user_id)
    if credential.current_store_id is not None:
        memberships = memberships.filter(store_id=credential.current_store_id)
    if credential.store_access != "all":
        memberships = memberships.filter(store_id__in=credential.selected_store_ids)
    return memberships.order_by("store_id").first()
