from django import forms
from django.contrib import admin

from config.api.errors import ValidationFailed
from stores.models import Membership, Store
from stores.services import store_slug_validate


class StoreAdminForm(forms.ModelForm):
    """The admin applies the API's slug rules (DESIGN.md "Stores"): lower-cased, 3..63 of
    [a-z0-9-], not reserved. A default ModelForm would accept "admin" or "My_Shop", which
    X-STORE could never reach."""

    class Meta:
        model = Store
        fields = ["name", "slug", "visibility", "created_by", "created_at"]

    def clean_slug(self):
        slug = self.cleaned_data["slug"]
        if self.instance.pk is not None and slug == self.instance.slug:
            return slug  # unchanged: editing other fields never fails on an older slug
        try:
            return store_slug_validate(slug)
        except ValidationFailed as error:
            raise forms.ValidationError(error.errors.get("slug", [error.message])) from None


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Store)
class StoreAdmin(admin.ModelAdmin):
    form = StoreAdminForm
    list_display = ["slug", "name", "visibility", "created_by", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "store", "role", "created_at"]
    list_filter = ["role"]
    search_fields = ["user__username", "store__slug"]
    autocomplete_fields = ["user", "store"]
