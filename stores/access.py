"""The one store resolver and the one permission check (DESIGN.md "X-STORE").

Every store-scoped view uses `StorePermission`: it resolves the store from X-STORE (or the
API key's current/first store), re-checks the membership, and requires the view's area
permission from key abilities ∩ role permissions. The result is `request.store`.
"""

from dataclasses import dataclass

from rest_framework.permissions import BasePermission

from accounts.abilities import effective_abilities
from accounts.credentials import CREDENTIAL_API_KEY, Credential
from config.api.errors import BadRequest, Forbidden
from stores.models import Membership, Store
from stores.selectors import membership_for, membership_for_slug, stores_accessible

STORE_HEADER = "X-STORE"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


@dataclass(frozen=True)
class StoreContext:
    store: Store
    membership: Membership
    effective_abilities: frozenset[str]


def resolve_store_context(request) -> StoreContext:
    """The store a request acts on; cached on the request. Raises 400/403 per DESIGN.md."""
    cached = getattr(request, "_store_context", None)
    if cached is not None:
        return cached
    credential: Credential = request.auth
    slug = request.headers.get(STORE_HEADER)
    if slug:
        membership = membership_for_slug(credential=credential, slug=slug)
        if membership is None:
            # Unknown and inaccessible slugs answer alike, so slugs cannot be probed.
            raise Forbidden(
                "The store named by X-STORE does not exist or is not accessible.",
                param=STORE_HEADER,
            )
    elif credential.requires_store_header:
        raise BadRequest("X-STORE is required with this credential.", param=STORE_HEADER)
    else:
        membership = None
        if credential.current_store_id is not None:
            membership = membership_for(credential=credential, store_id=credential.current_store_id)
        if membership is None:
            first = stores_accessible(credential=credential).first()
            if first is not None:
                membership = membership_for(credential=credential, store_id=first.id)
        if membership is None:
            raise Forbidden("This credential has no accessible store.", param=STORE_HEADER)
    context = StoreContext(
        store=membership.store,
        membership=membership,
        effective_abilities=effective_abilities(credential.abilities, membership.role),
    )
    request._store_context = context
    return context


def required_permission(area: str, method: str) -> str:
    return f"{area}:read" if method in SAFE_METHODS else f"{area}:write"


class StorePermission(BasePermission):
    """Resolves the store and requires `view.permission_area` (read for GET, else write)."""

    def has_permission(self, request, view):
        if request.auth is None:
            return False
        context = resolve_store_context(request)
        area = getattr(view, "permission_area", None)
        if area is not None:
            needed = required_permission(area, request.method)
            if needed not in context.effective_abilities:
                raise Forbidden(f"This credential and role do not allow '{needed}'.")
        request.store = context.store
        return True


class ApiKeyOnly(BasePermission):
    """v1 endpoints are for API keys; OAuth tokens are for v2 only (403)."""

    def has_permission(self, request, view):
        if request.auth is None:
            return False
        if request.auth.type != CREDENTIAL_API_KEY:
            raise Forbidden("v1 endpoints accept API keys only; use the v2 API with OAuth.")
        return True


class HasAbility(BasePermission):
    """Requires an account-level ability: `view.required_abilities` maps method to ability."""

    def has_permission(self, request, view):
        if request.auth is None:
            return False
        # HEAD is a GET without a body: it needs what GET needs.
        method = "GET" if request.method == "HEAD" else request.method
        ability = getattr(view, "required_abilities", {}).get(method)
        if ability and not request.auth.grants(ability):
            raise Forbidden(f"This credential lacks the '{ability}' ability.")
        return True
