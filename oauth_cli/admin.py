import oauth2_provider.admin  # noqa: F401  (registers DOT's admins, replaced below)
from django.contrib import admin, messages
from oauth2_provider.models import (
    get_access_token_admin_class,
    get_access_token_model,
    get_application_admin_class,
    get_application_model,
    get_grant_admin_class,
    get_grant_model,
    get_id_token_admin_class,
    get_id_token_model,
    get_refresh_token_admin_class,
    get_refresh_token_model,
)

from accounts.admin_secrets import SecretLookupsRefused
from core.admin_filters import NoAddAdminMixin, ViewOnlyAdminMixin
from oauth_cli import admin_sign_in_locks  # noqa: F401  (the user admin's lock-clearing action)
from oauth_cli.models import Installation, TokenFamily
from oauth_cli.services import installation_revoke, token_family_revoke

Application = get_application_model()

# DOT's own admins, view only. The one client is defined by settings and `manage.py
# ensure_cli_client`: the admin must not add clients (they would be refused anyway) or change
# the CLI's type, grant, consent skipping, secret or redirect URIs. Tokens and codes are not
# minted or edited by hand; they are revoked through installations and token families below,
# which keep the family bookkeeping right.
#
# A view-only form shows every field as text, so each secret is excluded here: DOT itself hides
# the raw token and code (and shows `masked_token`/`masked_code`), but not the client secret
# (hashed, yet a hash is what an offline guess is checked against) nor the token checksums
# (SHA-256 of the token: the lookup key that finds it).
SECRET_FIELDS = {
    Application: ["client_secret"],
    get_access_token_model(): ["token", "token_checksum"],
    get_refresh_token_model(): ["token", "token_checksum"],
    get_grant_model(): ["code"],
    get_id_token_model(): [],
}

for model, admin_class in [
    (Application, get_application_admin_class()),
    (get_access_token_model(), get_access_token_admin_class()),
    (get_refresh_token_model(), get_refresh_token_admin_class()),
    (get_grant_model(), get_grant_admin_class()),
    (get_id_token_model(), get_id_token_admin_class()),
]:
    if admin.site.is_registered(model):
        admin.site.unregister(model)
    admin.site.register(
        model,
        type(
            f"ViewOnly{admin_class.__name__}",
            (SecretLookupsRefused, ViewOnlyAdminMixin, admin_class),
            {
                "exclude": SECRET_FIELDS[model],
                # Nor filtered on: ?token__startswith=... would read a live token out.
                "secret_fields": tuple(SECRET_FIELDS[model]),
                # Users by autocomplete, as in every other admin (DOT uses a raw id input).
                "raw_id_fields": [
                    name for name in getattr(admin_class, "raw_id_fields", ()) if name != "user"
                ],
                "autocomplete_fields": ["user"],
            },
        ),
    )


class TokenFamilyInline(NoAddAdminMixin, admin.TabularInline):
    model = TokenFamily
    fields = ("id", "created_at", "expires_at", "revoked_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Installation)
class InstallationAdmin(NoAddAdminMixin, admin.ModelAdmin):
    """CLI connections; deleting one (or the action) revokes its codes and token families."""

    list_display = ("id", "user", "application", "created_at")
    search_fields = ("user__username", "user__email", "id")
    readonly_fields = ("id", "user", "application", "created_at")
    date_hierarchy = "created_at"
    list_select_related = ("user", "application")
    autocomplete_fields = ("user",)
    inlines = [TokenFamilyInline]
    actions = ["revoke_installations"]

    # Disconnecting deletes the installation, as the delete view does.
    @admin.action(
        description="Disconnect (revoke codes and all token families)", permissions=["delete"]
    )
    def revoke_installations(self, request, queryset):
        count = sum(
            installation_revoke(installation_id=pk) for pk in queryset.values_list("pk", flat=True)
        )
        self.message_user(request, f"Disconnected {count} installation(s).", messages.SUCCESS)

    def delete_model(self, request, obj):
        installation_revoke(installation_id=obj.pk)

    def delete_queryset(self, request, queryset):
        for pk in queryset.values_list("pk", flat=True):
            installation_revoke(installation_id=pk)


@admin.register(TokenFamily)
class TokenFamilyAdmin(NoAddAdminMixin, SecretLookupsRefused, admin.ModelAdmin):
    list_display = ("id", "installation", "created_at", "expires_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("installation__user__username", "id")
    readonly_fields = ("id", "installation", "created_at", "expires_at", "revoked_at")
    exclude = ("code_checksum",)
    secret_fields = ("code_checksum",)
    actions = ["revoke_families"]

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Revoke the selected token families", permissions=["change"])
    def revoke_families(self, request, queryset):
        for pk in queryset.values_list("pk", flat=True):
            token_family_revoke(family_id=pk)
        self.message_user(
            request, f"Revoked {queryset.count()} token family(ies).", messages.SUCCESS
        )
