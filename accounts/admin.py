from datetime import timedelta

from django import forms
from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from accounts.abilities import ACCOUNT_READ, AREAS, GRANTABLE_ABILITIES
from accounts.admin_secrets import SecretLookupsRefused, secret_shown_once_response
from accounts.models import ApiKey, User
from accounts.services import api_key_create, api_key_expiry_validate, api_key_revoke
from core.admin_filters import store_slug_filter
from core.api.errors import ValidationFailed

# What makes an account powerful: granted by superusers only (docs/decisions/hardening.md
# "Admin: keys for other users, privileges for oneself"). Django's change_user permission alone
# would let staff grant themselves anything, including is_superuser.
PRIVILEGE_FIELDS = ("is_staff", "is_superuser", "groups", "user_permissions")


@admin.register(User)
class StorefrontUserAdmin(UserAdmin):
    """Django's UserAdmin (which already refuses query-string lookups on the password hash),
    with privileges in superusers' hands: other staff see the privilege fields read-only, and
    may change or delete only accounts that hold none (or their own), since setting another
    staff member's password is taking over that member's privileges."""

    def get_readonly_fields(self, request, obj=None):
        fields = super().get_readonly_fields(request, obj)
        if request.user.is_superuser:
            return fields
        return [*fields, *PRIVILEGE_FIELDS]

    def _privileged_for(self, request, obj) -> bool:
        if obj is None or request.user.is_superuser or obj.pk == request.user.pk:
            return False
        return obj.is_staff or obj.is_superuser

    def has_change_permission(self, request, obj=None):
        if self._privileged_for(request, obj):
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        if self._privileged_for(request, obj):
            return False
        return super().has_delete_permission(request, obj)


admin.site.unregister(Group)


@admin.register(Group)
class StorefrontGroupAdmin(GroupAdmin):
    """A group's permissions are its members' permissions: only superusers set them."""

    def get_readonly_fields(self, request, obj=None):
        fields = super().get_readonly_fields(request, obj)
        return fields if request.user.is_superuser else [*fields, "permissions"]


# "Not used recently" in the usage filter: keys idle this long are candidates for revoking.
IDLE_AFTER = timedelta(days=90)


# A new key starts able to read (its account and every area); writes are granted on purpose.
NEW_KEY_ABILITIES = [ACCOUNT_READ, *(f"{area}:read" for area in AREAS)]


class ApiKeyForm(forms.ModelForm):
    abilities = forms.MultipleChoiceField(
        choices=[(a, a) for a in GRANTABLE_ABILITIES],
        widget=forms.CheckboxSelectMultiple,
        initial=NEW_KEY_ABILITIES,
        help_text="What the key may do, within its user's role in each store: `*` is "
        "everything, an area alone (`coupon`) reads and writes it, `area:read` only reads.",
    )

    class Meta:
        model = ApiKey
        fields = [
            "user",
            "name",
            "abilities",
            "store_access",
            "stores",
            "current_store",
            "expires_at",
        ]

    def clean_expires_at(self):
        try:
            return api_key_expiry_validate(self.cleaned_data["expires_at"])
        except ValidationFailed as error:
            raise forms.ValidationError(error.errors["expires_at"]) from None


class ExpiryFilter(admin.SimpleListFilter):
    title = "expiry"
    parameter_name = "expiry"

    def lookups(self, request, model_admin):
        return [("expired", "Expired"), ("expires", "Expires later"), ("never", "Never expires")]

    def queryset(self, request, queryset):
        now = timezone.now()
        if self.value() == "expired":
            return queryset.filter(expires_at__lte=now)
        if self.value() == "expires":
            return queryset.filter(expires_at__gt=now)
        if self.value() == "never":
            return queryset.filter(expires_at__isnull=True)
        return queryset


class UsageFilter(admin.SimpleListFilter):
    title = "usage"
    parameter_name = "usage"

    def lookups(self, request, model_admin):
        return [("never", "Never used"), ("idle", f"Not used in {IDLE_AFTER.days} days")]

    def queryset(self, request, queryset):
        if self.value() == "never":
            return queryset.filter(last_used_at__isnull=True)
        if self.value() == "idle":
            idle_since = timezone.now() - IDLE_AFTER
            return queryset.filter(Q(last_used_at__isnull=True) | Q(last_used_at__lt=idle_since))
        return queryset


@admin.register(ApiKey)
class ApiKeyAdmin(SecretLookupsRefused, admin.ModelAdmin):
    form = ApiKeyForm
    secret_fields = ("key_hash",)
    list_display = [
        "name",
        "prefix",
        "user",
        "store_access",
        "current_store",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    ]
    list_select_related = ["user", "current_store"]
    list_filter = [
        "store_access",
        ExpiryFilter,
        UsageFilter,
        ("revoked_at", admin.EmptyFieldListFilter),
        store_slug_filter("current_store__slug"),
    ]
    search_fields = ["name", "prefix", "user__username", "user__email"]
    readonly_fields = [
        "prefix",
        "created_at",
        "last_used_at",
        "revoked_at",
        "current_store_deleted_at",
    ]
    autocomplete_fields = ["user", "current_store", "stores"]
    actions = ["revoke_keys"]

    def get_autocomplete_fields(self, request):
        fields = super().get_autocomplete_fields(request)
        if request.user.is_superuser:
            return fields
        return [name for name in fields if name != "user"]  # a choice of one: their own

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        # A new key's secret is shown to whoever creates it: staff other than superusers may
        # create keys for their own account only (a key for a superuser would be one).
        if db_field.name == "user" and not request.user.is_superuser:
            kwargs["queryset"] = User.objects.filter(pk=request.user.pk)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_changeform_initial_data(self, request):
        return {"user": request.user.pk, **super().get_changeform_initial_data(request)}

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return self.readonly_fields
        # An issued key's owner, grants and lifetime (all it is issued with but its name) are
        # fixed: other ones are a new key. Staff who may revoke (change) must not hand a live
        # secret to another user or widen it.
        issued_with = [name for name in ApiKeyForm.Meta.fields if name != "name"]
        fixed = [*self.readonly_fields, *issued_with]
        if obj.current_store_id is None and obj.current_store_deleted_at is not None:
            # The one exception: re-pinning a key whose current store was deleted. It is
            # refused without X-STORE until then, so no working integration is moved.
            fixed.remove("current_store")
        return fixed

    def save_model(self, request, obj, form, change):
        if change:
            if obj.current_store_id is not None:
                # A new current store re-pins a key whose current store was deleted.
                obj.current_store_deleted_at = None
            return super().save_model(request, obj, form, change)
        # The form's fields but `stores`, which save_related sets once the key exists.
        issued_with = {n: form.cleaned_data[n] for n in ApiKeyForm.Meta.fields if n != "stores"}
        key, secret = api_key_create(**issued_with)
        obj.pk = key.pk
        obj.refresh_from_db()
        obj.secret_shown_once = secret

    def save_related(self, request, form, formsets, change):
        form.instance = ApiKey.objects.get(pk=form.instance.pk)
        super().save_related(request, form, formsets, change)

    def response_add(self, request, obj, post_url_continue=None):
        return secret_shown_once_response(
            self,
            request,
            title=f"New API key {obj.name}",
            secrets=[(f"{obj.name} ({obj.user})", obj.secret_shown_once)],
            continue_url=reverse("admin:accounts_apikey_change", args=[obj.pk]),
        )

    @admin.action(description="Revoke selected API keys", permissions=["change"])
    def revoke_keys(self, request, queryset):
        for key in queryset:
            api_key_revoke(api_key=key)
        self.message_user(request, f"Revoked {queryset.count()} key(s).")
