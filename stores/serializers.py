import re

from django.conf import settings
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.api.fields import StrictCharField
from stores.models import Store
from stores.services import RESERVED_SLUGS


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


def _case_insensitive(word: str) -> str:
    return "".join(f"[{c}{c.upper()}]" if c.isalpha() else re.escape(c) for c in word)


# The schema states exactly what stores.services accepts, so generated valid requests pass.
SLUG_SCHEMA = {
    "type": "string",
    "minLength": 3,
    "maxLength": 63,
    "pattern": "^[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]$",
    "not": {
        "pattern": "^(" + "|".join(_case_insensitive(w) for w in sorted(RESERVED_SLUGS)) + ")$"
    },
    "description": "3 to 63 of a-z, 0-9 and '-', not starting or ending with '-'; "
    "lower-cased; unique; not a reserved name (api, www, admin, ...).",
}
NAME_SCHEMA = {
    "type": "string",
    "minLength": 1,
    "maxLength": 255,
    # Not blank, no NUL characters (PostgreSQL text cannot hold them).
    "pattern": "^[^\\x00]*[^\\s\\x00][^\\x00]*$",
}


@extend_schema_field(SLUG_SCHEMA)
class SlugInputField(StrictCharField):
    pass


@extend_schema_field(NAME_SCHEMA)
class NameInputField(StrictCharField):
    pass


# Types only: stores.services.store_create checks the rules (one place for them).
class StoreCreateInputSerializer(serializers.Serializer):
    name = NameInputField(trim_whitespace=False, min_length=1, max_length=255)
    slug = SlugInputField(trim_whitespace=False, min_length=3, max_length=63)
