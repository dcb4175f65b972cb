from django.contrib import admin, messages

from config.api.errors import ApiError
from orders.models import Order
from orders.services import order_complete


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    list_display = ["id", "store", "status", "total_cents", "currency", "coupon", "created_at"]
    list_filter = ["status", "currency", "store"]
    search_fields = ["=id"]
    list_select_related = ["store", "coupon"]
    raw_id_fields = ["coupon"]
    readonly_fields = ["status", "completed_at", "created_at", "updated_at"]
    actions = ["complete_orders"]

    @admin.action(description="Complete order")
    def complete_orders(self, request, queryset):
        completed = 0
        for order in queryset:
            try:
                order_complete(order=order)
            except ApiError as error:
                self.message_user(request, f"Order {order.pk}: {error.message}", messages.ERROR)
            else:
                completed += 1
        if completed:
            self.message_user(request, f"Completed {completed} order(s).", messages.SUCCESS)
