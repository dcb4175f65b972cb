from django.conf import settings
from django.urls import reverse
from rest_framework import serializers

from stores.models import Store


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


class StoreCreateInputSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=255, allow_blank=False, trim_whitespace=True)
    slug = serializers.CharField(max_length=255)
