"""Coupons in the Django admin: read-only records; soft delete and restore go through the
services, so every change is validated and journalled like an API change."""

from django.contrib import admin, messages

from core.admin_filters import StoreSlugFilter, ViewOnlyAdminMixin
from core.api.errors import ApiError
from coupons.models import Coupon
from coupons.services import coupon_delete, coupon_restore


class DeletedFilter(admin.SimpleListFilter):
    title = "deleted"
    parameter_name = "deleted"

    def lookups(self, request, model_admin):
        return [("no", "Live"), ("yes", "Deleted")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.deleted()
        if self.value() == "no":
            return queryset.live()
        return queryset


@admin.register(Coupon)
class CouponAdmin(ViewOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "code",
        "store",
        "type",
        "discount",
        "maximum_discount_amount",
        "applies_to",
        "targets",
        "usage",
        "expires_at",
        "is_deleted",
        "deleted_at",
    ]
    list_select_related = ["store"]
    list_filter = [StoreSlugFilter, "type", "applies_to", "store_wide", DeletedFilter]
    # The record's page shows every field, the issue-32 ones included, read-only.
    fields = [
        "store",
        "code",
        "type",
        "discount",
        "maximum_discount_amount",
        "minimum_amount",
        "applies_to",
        "subscription_payments",
        "store_wide",
        "products",
        "product_variants",
        "limit",
        "times_used",
        "expires_at",
        "created_at",
        "updated_at",
        "deleted_at",
    ]
    search_fields = ["code"]
    autocomplete_fields = ["store"]
    date_hierarchy = "created_at"
    ordering = ["-id"]
    actions = ["soft_delete", "restore"]

    @admin.display(description="applies to products")
    def targets(self, coupon: Coupon) -> str:
        if coupon.store_wide:
            return "whole store"
        return f"{len(coupon.products)} product(s), {len(coupon.product_variants)} variant(s)"

    @admin.display(description="usage")
    def usage(self, coupon: Coupon) -> str:
        limit = "unlimited" if coupon.limit is None else coupon.limit
        return f"{coupon.times_used} / {limit}"

    @admin.display(description="deleted", boolean=True)
    def is_deleted(self, coupon: Coupon) -> bool:
        return coupon.deleted_at is not None

    # Writes only through the actions (services), as ViewOnlyAdminMixin leaves them: the
    # built-in forms would bypass them.
    def has_manage_permission(self, request):
        return request.user.has_perm("coupons.change_coupon")

    def _run(self, request, coupons, service, done: str):
        succeeded = 0
        for coupon in coupons:
            try:
                service(coupon=coupon)
                succeeded += 1
            except ApiError as error:
                detail = "; ".join(
                    f"{field} {' '.join(msgs)}" for field, msgs in (error.errors or {}).items()
                )
                self.message_user(
                    request, f"{coupon.code}: {detail or error.message}", messages.ERROR
                )
        if succeeded:
            self.message_user(request, f"{succeeded} coupon(s) {done}.", messages.SUCCESS)

    @admin.action(description="Soft-delete the selected coupons", permissions=["manage"])
    def soft_delete(self, request, queryset):
        self._run(request, queryset.live(), coupon_delete, "deleted")

    @admin.action(description="Restore the selected deleted coupons", permissions=["manage"])
    def restore(self, request, queryset):
        self._run(request, queryset.deleted(), coupon_restore, "restored")
