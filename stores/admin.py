from django import forms
from django.contrib import admin
from rest_framework import serializers

from core.admin_filters import StoreSlugFilter
from core.api.errors import ValidationFailed
from stores.models import Membership, Store
from stores.serializers import StoreSlugField
from stores.services import store_slug_check_not_reserved


class StoreAdminForm(forms.ModelForm):
    """The admin applies the API's slug rules (docs/design.md "Stores"): the format of the API's
    slug field (lower-cased, 3..63 of [a-z0-9-]) and the service's reserved names. A default
    ModelForm would accept "admin" or "My_Shop", which X-STORE could never reach."""

    class Meta:
        model = Store
        fields = ["name", "slug", "visibility", "created_by", "created_at"]

    def clean_slug(self):
        slug = self.cleaned_data["slug"]
        if self.instance.pk is not None and slug == self.instance.slug:
            return slug  # unchanged: editing other fields never fails on an older slug
        try:
            slug = StoreSlugField().run_validation(slug)
        except serializers.ValidationError as error:
            raise forms.ValidationError(error.detail) from None
        try:
            store_slug_check_not_reserved(slug)
        except ValidationFailed as error:
            raise forms.ValidationError(error.errors["slug"]) from None
        return slug


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Store)
class StoreAdmin(admin.ModelAdmin):
    form = StoreAdminForm
    list_display = ["slug", "name", "visibility", "created_by", "created_at"]
    search_fields = ["slug", "name"]
    ordering = ["slug"]
    date_hierarchy = "created_at"
    autocomplete_fields = ["created_by"]
    list_select_related = ["created_by"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "store", "role", "created_at"]
    list_filter = ["role", StoreSlugFilter]
    list_select_related = ["user", "store"]
    search_fields = ["user__username", "store__slug"]
    autocomplete_fields = ["user", "store"]
