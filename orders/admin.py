from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError

from config.api.errors import ApiError, ValidationFailed
from orders.models import Order
from orders.services import order_complete, order_place


class OrderPlaceForm(forms.ModelForm):
    """Placing an order in the admin goes through `order_place` (coupon included)."""

    coupon_code = forms.CharField(required=False, max_length=64)

    class Meta:
        model = Order
        fields = ["store", "subtotal_cents", "currency"]

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            self.placed = order_place(
                store=cleaned["store"],
                subtotal_cents=cleaned["subtotal_cents"],
                currency=cleaned["currency"],
                coupon_code=cleaned.get("coupon_code") or None,
            )
        except ValidationFailed as error:
            raise ValidationError(
                {
                    name: messages_
                    for name, messages_ in (error.errors or {}).items()
                    if name in self.fields
                }
                or error.message
            ) from None
        return cleaned


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    list_display = ["id", "store", "status", "total_cents", "currency", "coupon", "created_at"]
    list_filter = ["status", "currency", "store"]
    search_fields = ["=id"]
    list_select_related = ["store", "coupon"]
    actions = ["complete_orders"]

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = OrderPlaceForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["store", "subtotal_cents", "currency", "coupon_code"]
        return [field.name for field in Order._meta.fields]

    def get_readonly_fields(self, request, obj=None):
        # Orders change only through services (the "Complete order" action).
        return [] if obj is None else [field.name for field in Order._meta.fields]

    def save_model(self, request, obj, form, change):
        if not change:
            obj.pk = form.placed.pk
            obj.refresh_from_db()

    def save_related(self, request, form, formsets, change):
        if change:
            super().save_related(request, form, formsets, change)

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
