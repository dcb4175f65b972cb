"""Which store a console page acts on, and what the member may do there.

The console's credential is the signed-in session, which holds every ability: what applies is
the role's permissions, computed by the API's own rule (accounts.abilities.effective_abilities,
key abilities ∩ role) with the key's abilities being all of them. The chosen store's id is kept
in the session (an id, never a secret); its membership is read again on every request, so a
member removed from a store loses it at once.
"""

from dataclasses import dataclass

from accounts.abilities import ALL, effective_abilities
from core.api.errors import Forbidden
from stores.models import Membership, Store

SESSION_STORE_KEY = "console_store_id"


@dataclass(frozen=True)
class ConsoleStore:
    store: Store
    membership: Membership
    abilities: frozenset[str]

    def may(self, permission: str) -> bool:
        return permission in self.abilities

    def require(self, permission: str) -> None:
        """Forbidden (403) unless the member's role allows `permission` (`webhook:write`...)."""
        if permission not in self.abilities:
            raise Forbidden(f"Your role ({self.membership.role}) does not allow '{permission}'.")


def console_store(request) -> ConsoleStore | None:
    """The store chosen in this session, else the member's first; None without a membership.
    One query."""
    memberships = Membership.objects.select_related("store").filter(user_id=request.user.pk)
    chosen = request.session.get(SESSION_STORE_KEY)
    membership = None
    if chosen is not None:
        membership = memberships.filter(store_id=chosen).first()
    if membership is None:
        membership = memberships.order_by("store_id").first()
    if membership is None:
        return None
    return ConsoleStore(
        store=membership.store,
        membership=membership,
        abilities=effective_abilities((ALL,), membership.role),
    )


def console_store_choose(request, *, store_id) -> Store:
    """Keeps `store_id` in the session as the store to work in; NotFound-like 403 when the
    user is not a member (unknown and foreign stores answer alike)."""
    membership = (
        Membership.objects.select_related("store")
        .filter(user_id=request.user.pk, store_id=store_id)
        .first()
    )
    if membership is None:
        raise Forbidden("That store does not exist or you are not a member of it.")
    request.session[SESSION_STORE_KEY] = membership.store_id
    return membership.store
