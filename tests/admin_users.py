"""Logged-in admin clients for staff who hold only some permissions (not superusers)."""

from django.contrib.auth.models import Permission
from django.contrib.messages.storage.cookie import CookieStorage
from django.contrib.sessions.models import Session
from django.test import Client

from tests.factories import UserFactory


def staff_client_with(*permissions: str) -> Client:
    """A client logged in as a staff user holding exactly `permissions` ("app_label.codename")."""
    user = UserFactory(is_staff=True)
    for permission in permissions:
        app_label, codename = permission.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    client = Client()
    client.force_login(user)
    return client


def post_action(client: Client, changelist: str, action: str, selected, **extra):
    """Posts an admin changelist action for the selected primary keys, as the action bar does."""
    return client.post(
        changelist,
        {"action": action, "_selected_action": [str(pk) for pk in selected], **extra},
    )


def cookies_carry(response, client: Client, secret: str) -> bool:
    """Whether a cookie set by the response, or now held by the client, contains `secret`,
    also inside the messages cookie (signed and compressed, so not visible as plain text)."""
    morsels = [*response.cookies.values(), *client.cookies.values()]
    for morsel in morsels:
        if secret in morsel.value:
            return True
        if morsel.key == CookieStorage.cookie_name and morsel.value:
            decoded = CookieStorage(None)._decode(morsel.value) or []
            if any(secret in str(message) for message in decoded):
                return True
    return False


def sessions_carry(secret: str) -> bool:
    """Whether any stored session (session message storage included) contains `secret`."""
    return any(secret in str(session.get_decoded()) for session in Session.objects.all())
