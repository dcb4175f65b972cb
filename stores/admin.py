from django.contrib import admin

from stores.models import Membership, Store


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Store)
class StoreAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "visibility", "created_by", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "store", "role", "created_at"]
    list_filter = ["role"]
    search_fields = ["user__username", "store__slug"]
    autocomplete_fields = ["user", "store"]
