from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin

from accounts.abilities import GRANTABLE_ABILITIES
from accounts.models import ApiKey, User
from accounts.services import api_key_create, api_key_revoke

admin.site.register(User, UserAdmin)


class ApiKeyForm(forms.ModelForm):
    abilities = forms.MultipleChoiceField(
        choices=[(a, a) for a in GRANTABLE_ABILITIES], widget=forms.CheckboxSelectMultiple
    )

    class Meta:
        model = ApiKey
        fields = ["user", "name", "abilities", "store_access", "stores", "current_store"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    form = ApiKeyForm
    list_display = [
        "name",
        "prefix",
        "user",
        "store_access",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["store_access", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "prefix", "user__username", "user__email"]
    readonly_fields = ["prefix", "created_at", "last_used_at", "revoked_at"]
    autocomplete_fields = ["user"]
    filter_horizontal = ["stores"]
    actions = ["revoke_keys"]

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        key, secret = api_key_create(
            user=form.cleaned_data["user"],
            name=form.cleaned_data["name"],
            abilities=form.cleaned_data["abilities"],
            store_access=form.cleaned_data["store_access"],
            current_store=form.cleaned_data["current_store"],
        )
        obj.pk = key.pk
        obj.refresh_from_db()
        messages.warning(
            request, f"The new API key is {secret} — copy it now, it will not be shown again."
        )

    def save_related(self, request, form, formsets, change):
        form.instance = ApiKey.objects.get(pk=form.instance.pk)
        super().save_related(request, form, formsets, change)

    @admin.action(description="Revoke selected API keys")
    def revoke_keys(self, request, queryset):
        for key in queryset:
            api_key_revoke(api_key=key)
        self.message_user(request, f"Revoked {queryset.count()} key(s).")
