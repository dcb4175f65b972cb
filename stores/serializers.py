"""The store contract: the request fields with their format rules, and the representations.

The rules of `slug` and `name` are the validators of their field classes (length first,
core/api/fields.py), from which drf-spectacular derives the schema and which the admin's store
form runs too; rules that need the database or a lock are stores.services'.
"""

import re

from django.conf import settings
from django.core.validators import RegexValidator
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.serializers import CREDENTIAL_TYPES, SortedStringsField
from core.api.fields import StrictCharField
from stores.models import Store
from stores.services import RESERVED_SLUGS


class FormatRulesField(StrictCharField):
    """A JSON string checked against its class's format rules: length bounds, checked first
    (core/api/fields.py), then its format, each declared once as a validator (so the schema
    states them too)."""

    min_length: int
    max_length: int
    pattern: str
    pattern_message: str
    length_message: str | None = None  # None: DRF's own messages

    def __init__(self, **kwargs):
        messages = dict.fromkeys(["min_length", "max_length"], self.length_message)
        super().__init__(
            min_length=self.min_length,
            max_length=self.max_length,
            trim_whitespace=False,
            validators=self.format_validators(),
            error_messages=messages if self.length_message else {},
            **kwargs,
        )

    def format_validators(self) -> list:
        return [RegexValidator(self.pattern, self.pattern_message)]


def _case_insensitive(word: str) -> str:
    return "".join(f"[{c}{c.upper()}]" if c.isalpha() else re.escape(c) for c in word)


# Only what the validators cannot say: the reserved names (a rule of stores.services), so that
# schema-valid requests are accepted. Lengths and pattern are added from the validators.
@extend_schema_field(
    {
        "type": "string",
        "not": {
            "pattern": "^(" + "|".join(_case_insensitive(w) for w in sorted(RESERVED_SLUGS)) + ")$"
        },
        "description": "3 to 63 of a-z, 0-9 and '-', not starting or ending with '-'; "
        "lower-cased; unique; not a reserved name (api, www, admin, ...).",
    }
)
class StoreSlugField(FormatRulesField):
    min_length = 3
    max_length = 63
    length_message = "must be 3 to 63 characters long"
    # ASCII letters of either case, lower-cased after validation: the same as lower-casing
    # first and requiring [a-z0-9-], and it refuses the non-ASCII letters that str.lower()
    # folds into ASCII ones (the Kelvin sign). \A and \Z: `$` would also match before a
    # trailing newline; drf-spectacular writes them as ECMA's ^ and $.
    pattern = r"\A[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]\Z"
    pattern_message = "may contain only a-z, 0-9 and '-', and may not start or end with '-'"

    def run_validation(self, data=serializers.empty):
        return super().run_validation(data).lower()


NAME_RULE = "may not be blank or contain NUL characters"


def validate_store_name(name: str) -> None:
    """Not blank (a non-space character) and no NUL (PostgreSQL text cannot hold it), checked
    directly: a regular expression that says it backtracks in time quadratic in the length.
    `isspace` and a pattern's `\\s` are the same Unicode whitespace."""
    if "\x00" in name or name.isspace():
        raise serializers.ValidationError(NAME_RULE)


# The same rule for clients, as the schema's pattern (ECMA, matched by no server code).
@extend_schema_field({"type": "string", "pattern": r"^[^\u0000]*[^\s\u0000][^\u0000]*$"})
class StoreNameField(FormatRulesField):
    min_length = 1
    max_length = 255

    def format_validators(self) -> list:
        return [validate_store_name]


class StoreCreateSerializer(serializers.Serializer):
    """The body of POST /api/v2/stores."""

    name = StoreNameField()
    slug = StoreSlugField()


class StoreSerializer(serializers.ModelSerializer):
    id = serializers.CharField(read_only=True)

    class Meta:
        model = Store
        fields = ["id", "slug", "name"]


class StoreCreatedSerializer(StoreSerializer):
    """The store-creation response: the only one that carries visibility and URLs."""

    storefront_url = serializers.SerializerMethodField()
    dashboard_url = serializers.SerializerMethodField()

    class Meta(StoreSerializer.Meta):
        fields = [*StoreSerializer.Meta.fields, "visibility", "storefront_url", "dashboard_url"]

    def get_storefront_url(self, store) -> str:
        return f"https://{store.slug}.{settings.STOREFRONT_DOMAIN}"

    def get_dashboard_url(self, store) -> str:
        return settings.BASE_URL + reverse("admin:stores_store_change", args=[store.pk])


class PermissionsSerializer(serializers.Serializer):
    """What a credential may do in a store: `{"credential", "store_context",
    "role_permissions"}`, rendered for /permissions."""

    credential_type = serializers.ChoiceField(choices=CREDENTIAL_TYPES, source="credential.type")
    key_abilities = SortedStringsField(source="credential.abilities")
    store_access = serializers.ChoiceField(
        choices=["all", "selected"], source="credential.store_access"
    )
    store_permissions = SortedStringsField(source="role_permissions")
    effective_abilities = SortedStringsField(source="store_context.effective_abilities")


# OpenAPI examples (spec "Store (v2)" and "Permissions"), used by stores/views.py.
STORE_EXAMPLE = {"id": "7", "slug": "acme-outdoor", "name": "Acme Outdoor"}
STORE_CREATE_EXAMPLE = {"name": "Acme Outdoor", "slug": "acme-outdoor"}
STORE_CREATED_EXAMPLE = {
    **STORE_EXAMPLE,
    "visibility": "PUBLIC",
    "storefront_url": "https://acme-outdoor.storefront.example.com",
    "dashboard_url": "https://storefront.example.com/admin/stores/store/7/change/",
}
PERMISSIONS_EXAMPLE = {
    "credential_type": "api_key",
    "key_abilities": ["account:read", "coupon", "invoice:read"],
    "store_access": "all",
    "store_permissions": ["coupon:read", "coupon:write", "invoice:read", "invoice:write"],
    "effective_abilities": ["account:read", "coupon:read", "coupon:write", "invoice:read"],
}
