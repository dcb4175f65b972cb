"""The user admin's "Clear sign-in locks" action: how staff let an owner back in while strangers
keep failing at her username (docs/decisions/hardening.md "Hardening III: sign-in recovery").
Added here, above accounts, because the lock keys are the sign-in limits'
(oauth_cli/login_limits.py)."""

from django.contrib import admin
from django.contrib.auth import get_user_model

from oauth_cli.login_limits import sign_in_locks_clear


@admin.action(description="Clear the sign-in locks of selected users", permissions=["change"])
def clear_sign_in_locks(modeladmin, request, queryset):
    users = list(queryset)
    for user in users:
        sign_in_locks_clear(username=user.get_username())
        modeladmin.log_change(request, user, "Cleared the sign-in locks.")
    modeladmin.message_user(request, f"Cleared the sign-in locks of {len(users)} user(s).")


user_admin = admin.site.get_model_admin(get_user_model())
user_admin.actions = [*user_admin.actions, clear_sign_in_locks]
