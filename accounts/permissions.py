"""The one account-level permission check: an ability the credential itself holds (e.g.
`account:read`), whatever store. Store-scoped checks are stores.access.StorePermission."""

from django.core.exceptions import ImproperlyConfigured
from rest_framework.permissions import BasePermission

from core.api.errors import Forbidden


def _serves(view, method: str) -> bool:
    """Whether `view` answers `method` (DRF checks permissions before it answers 405)."""
    if method == "OPTIONS":
        # APIView always has options(); without a metadata class it answers 405.
        return view.metadata_class is not None
    return method.lower() in view.http_method_names and hasattr(view, method.lower())


class HasAbility(BasePermission):
    """Requires an account-level ability: `view.required_abilities` maps each method the view
    serves to an ability, or to None (deliberately none). An unlisted method is a
    configuration error, not a free pass."""

    def has_permission(self, request, view):
        if request.auth is None:
            return False
        # HEAD is a GET without a body: it needs what GET needs.
        method = "GET" if request.method == "HEAD" else request.method
        required = getattr(view, "required_abilities", {})
        if method not in required:
            if not _serves(view, method):
                return True  # the view answers 405
            raise ImproperlyConfigured(
                f"{type(view).__name__} serves {method} but `required_abilities` does not "
                "list it; map it to an ability, or to None to require none."
            )
        ability = required[method]
        if ability is not None and not request.auth.grants(ability):
            raise Forbidden(f"This credential lacks the '{ability}' ability.")
        return True
