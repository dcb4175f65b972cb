from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError

from core.admin_filters import StoreSlugFilter
from core.api.errors import ApiError, ValidationFailed
from orders.models import Order
from orders.services import order_complete, order_place


class OrderPlaceForm(forms.ModelForm):
    """The fields of a new order. Validating it writes nothing: OrderAdmin.save_model places
    the order through `order_place`, and a refusal of that service (an unusable coupon, a bad
    currency) comes back here as `refusal`, shown as this form's errors."""

    # As long as a coupon's code may be (Coupon.code).
    coupon_code = forms.CharField(required=False, max_length=255)
    refusal: ValidationFailed | None = None

    class Meta:
        model = Order
        fields = ["store", "subtotal_cents", "currency"]

    def clean(self):
        cleaned = super().clean()
        if self.refusal is not None:
            raise ValidationError(
                {
                    name: messages_
                    for name, messages_ in (self.refusal.errors or {}).items()
                    if name in self.fields
                }
                or self.refusal.message
            )
        return cleaned


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    list_display = ["id", "store", "status", "total_cents", "currency", "coupon", "created_at"]
    list_filter = ["status", "currency", StoreSlugFilter]
    search_fields = ["=id"]
    date_hierarchy = "created_at"
    autocomplete_fields = ["store"]
    list_select_related = ["store", "coupon"]
    actions = ["complete_orders"]

    def add_view(self, request, form_url="", extra_context=None):
        try:
            return super().add_view(request, form_url, extra_context)
        except ValidationFailed as refusal:
            # order_place refused in save_model and the add view's transaction rolled back:
            # show the same submission again, with the refusal as the form's errors.
            request.order_place_refusal = refusal
            return super().add_view(request, form_url, extra_context)

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = OrderPlaceForm
        form = super().get_form(request, obj, change=change, **kwargs)
        if obj is None:
            # get_form builds a new class per call, so the refusal stays with this request.
            form.refusal = getattr(request, "order_place_refusal", None)
        return form

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["store", "subtotal_cents", "currency", "coupon_code"]
        return [field.name for field in Order._meta.fields]

    def get_readonly_fields(self, request, obj=None):
        # Orders change only through services (the "Complete order" action).
        return [] if obj is None else [field.name for field in Order._meta.fields]

    def save_model(self, request, obj, form, change):
        if change:
            return  # every field is read-only; changes go through the actions
        placed = order_place(
            store=form.cleaned_data["store"],
            subtotal_cents=form.cleaned_data["subtotal_cents"],
            currency=form.cleaned_data["currency"],
            coupon_code=form.cleaned_data.get("coupon_code") or None,
        )
        obj.pk = placed.pk
        obj.refresh_from_db()

    def save_related(self, request, form, formsets, change):
        if change:
            super().save_related(request, form, formsets, change)

    @admin.action(description="Complete order", permissions=["change"])
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
