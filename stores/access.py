"""The one store resolver and the one permission check (docs/design.md "X-STORE").

Every store-scoped view uses `StorePermission`: it resolves the store from X-STORE (or the
API key's current/first store), re-checks the membership, and requires the view's area
permission from key abilities ∩ role permissions. The result is `request.store`.

It fails closed, as accounts.permissions.HasAbility does: a view that forgets to say what it
requires is a configuration error (ImproperlyConfigured, a 500), never an open door. Opting out
is explicit (`None`).
"""

from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured
from rest_framework.permissions import SAFE_METHODS, BasePermission

from accounts.abilities import effective_abilities
from accounts.credentials import CREDENTIAL_API_KEY, Credential
from core.api.errors import BadRequest, Forbidden
from stores.models import Membership, Store
from stores.selectors import membership_default, membership_for_slug

STORE_HEADER = "X-STORE"
STORE_SLUG_MAX_LENGTH = Store._meta.get_field("slug").max_length


@dataclass(frozen=True)
class StoreContext:
    store: Store
    membership: Membership
    effective_abilities: frozenset[str]


def named_store_slug(request) -> str | None:
    """The store the request names by X-STORE; None without the header (or with it empty)."""
    return request.headers.get(STORE_HEADER) or None


# Slugs a credential's memo keeps memberships for; emptied past this many (a client naming
# ever new slugs must not grow a process's memory).
MEMO_MAX_SLUGS = 100
_NOT_READ = object()
_DEFAULT = ("default",)  # beside ("slug", <X-STORE>) keys: no header value can equal it


def _memoized(credential: Credential, key: tuple, read) -> StoreContext | None:
    """The context of the membership `read()` returns (None without one), kept in the
    credential's memo: a kept credential's identity is current (accounts/identity.py) so its
    memberships are too, and a change to either advances its epochs, which gives the next
    request a new credential and an empty memo."""
    memo = credential.memo
    # get(), not `in` then [], as another thread of the process may empty the memo between.
    context = memo.get(key, _NOT_READ)
    if context is _NOT_READ:
        if len(memo) > MEMO_MAX_SLUGS:
            memo.clear()
        membership = read()
        context = memo[key] = membership and StoreContext(
            store=membership.store,
            membership=membership,
            effective_abilities=effective_abilities(credential.abilities, membership.role),
        )
    return context


def resolve_store_context(request) -> StoreContext:
    """The store a request acts on; cached on the request. Raises 400/403 per docs/design.md
    "X-STORE"."""
    cached = getattr(request, "_store_context", None)
    if cached is not None:
        return cached
    credential: Credential = request.auth
    slug = named_store_slug(request)
    if slug is not None:
        # Length first (core/api/fields.py): no lookup reads a value no slug can have.
        context = None
        if len(slug) <= STORE_SLUG_MAX_LENGTH:
            context = _memoized(
                credential,
                ("slug", slug),
                lambda: membership_for_slug(credential=credential, slug=slug),
            )
        if context is None:
            # Unknown and inaccessible slugs answer alike, so slugs cannot be probed.
            raise Forbidden(
                "The store named by X-STORE does not exist or is not accessible.",
                param=STORE_HEADER,
            )
    elif credential.requires_store_header:
        raise BadRequest("X-STORE is required with this credential.", param=STORE_HEADER)
    elif credential.current_store_id is not None:
        # The current store's, never another.
        context = _memoized(credential, _DEFAULT, lambda: membership_default(credential=credential))
        if context is None:
            # Spec "Authentication" rule 2: the first store is the fallback only when no current
            # store is selected; an integration pinned to one store must never act on another.
            raise Forbidden(
                "The API key's current store is no longer accessible; select another store "
                "with X-STORE or change the key's current store.",
                param=STORE_HEADER,
            )
    elif credential.current_store_deleted:
        # Same rule for a pinned store that is gone: never fall back to another store.
        raise Forbidden(
            "The API key's current store was deleted; select a store with X-STORE or give "
            "the key a new current store.",
            param=STORE_HEADER,
        )
    else:
        context = _memoized(credential, _DEFAULT, lambda: membership_default(credential=credential))
        if context is None:
            raise Forbidden("This credential has no accessible store.", param=STORE_HEADER)
    request._store_context = context
    return context


class StorePermission(BasePermission):
    """Resolves the store and requires `view.permission_area` (read for GET and the view's
    `read_actions`, else write).

    `permission_area = None` (deliberately) resolves the store without an area check, for
    `/permissions`, which tells a client what it may do.
    """

    def has_permission(self, request, view):
        if request.auth is None:
            return False
        if not hasattr(view, "permission_area"):
            raise ImproperlyConfigured(
                f"{type(view).__name__} uses StorePermission without `permission_area`; "
                "name the area, or set it to None to require no area permission."
            )
        context = resolve_store_context(request)
        area = view.permission_area
        if area is not None:
            # A view's `read_actions` read through another method (a search's POST body).
            reads = request.method in SAFE_METHODS or getattr(view, "action", None) in getattr(
                view, "read_actions", ()
            )
            needed = f"{area}:{'read' if reads else 'write'}"
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
