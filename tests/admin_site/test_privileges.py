"""Privileges in the admin are granted by superusers only (docs/decisions/hardening.md,
"Hardening IV", 5): staff holding change_user or change_group cannot raise their own or anyone's
is_staff, is_superuser, groups or permissions, nor take over a privileged account by changing it
(its password included). Real POSTs of the admin's forms."""

import pytest
from django.contrib.auth.models import Group, Permission
from django.test import Client

from accounts.models import User
from tests.admin_users import staff_client_with
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

USERS = "/admin/accounts/user/"
GROUPS = "/admin/auth/group/"


def signed_in_user(client: Client) -> User:
    return User.objects.get(pk=client.session["_auth_user_id"])


def user_form(user: User, **fields) -> dict:
    """The change form of `user` as the admin page posts it, plus `fields`."""
    return {
        "username": user.username,
        "first_name": "Renamed",
        "last_name": "",
        "email": user.email,
        "is_active": "on",
        "date_joined_0": "2026-01-02",
        "date_joined_1": "03:04:05",
        "last_login_0": "",
        "last_login_1": "",
        **fields,
    }


def privileges(user: User) -> tuple:
    user.refresh_from_db()
    return (
        user.is_staff,
        user.is_superuser,
        set(user.groups.values_list("name", flat=True)),
        set(user.user_permissions.values_list("codename", flat=True)),
    )


RAISED = {
    "is_staff": "on",
    "is_superuser": "on",
}


@pytest.fixture
def admins_group():
    group = Group.objects.create(name="admins")
    group.permissions.add(Permission.objects.get(codename="delete_user"))
    return group


def test_staff_with_change_user_cannot_raise_their_own_privileges(admins_group):
    # given: staff who may change users, and nothing else
    editor = staff_client_with("accounts.view_user", "accounts.change_user")
    me = signed_in_user(editor)
    before = privileges(me)
    everything = Permission.objects.get(codename="delete_apikey")
    # when: their own change form is posted with every privilege
    response = editor.post(
        f"{USERS}{me.pk}/change/",
        user_form(me, **RAISED, groups=[admins_group.pk], user_permissions=[everything.pk]),
    )
    # then: the rest of the form is saved, no privilege is
    assert response.status_code == 302, response.content.decode()
    assert privileges(me) == before
    assert me.first_name == "Renamed"


def test_staff_with_change_user_cannot_raise_another_users_privileges(admins_group):
    editor = staff_client_with("accounts.view_user", "accounts.change_user")
    customer = UserFactory()
    everything = Permission.objects.get(codename="delete_apikey")

    response = editor.post(
        f"{USERS}{customer.pk}/change/",
        user_form(customer, **RAISED, groups=[admins_group.pk], user_permissions=[everything.pk]),
    )

    assert response.status_code == 302
    assert privileges(customer) == (False, False, set(), set())
    assert customer.first_name == "Renamed"


def test_the_change_form_offers_staff_no_input_for_a_privilege():
    editor = staff_client_with("accounts.view_user", "accounts.change_user")
    customer = UserFactory()

    html = editor.get(f"{USERS}{customer.pk}/change/").content.decode()

    assert 'name="first_name"' in html
    for field in ("is_staff", "is_superuser", "groups", "user_permissions"):
        assert f'name="{field}"' not in html, field


@pytest.mark.parametrize("target", ["superuser", "staff"])
def test_staff_cannot_change_a_privileged_account_nor_its_password(target):
    # given: another account that holds privileges
    editor = staff_client_with("accounts.view_user", "accounts.change_user", "accounts.delete_user")
    privileged = UserFactory(is_staff=True, is_superuser=target == "superuser")
    # when / then: its change form, its password form and its deletion are refused
    form = user_form(privileged, email="attacker@example.com")
    assert editor.post(f"{USERS}{privileged.pk}/change/", form).status_code == 403
    new_password = {"password1": "a-new-pass-phrase", "password2": "a-new-pass-phrase"}
    assert editor.post(f"{USERS}{privileged.pk}/password/", new_password).status_code == 403
    assert editor.post(f"{USERS}{privileged.pk}/delete/", {"post": "yes"}).status_code == 403
    privileged.refresh_from_db()
    assert privileged.email != "attacker@example.com"
    assert privileged.check_password("password")
    # and the page shows it read-only
    page = editor.get(f"{USERS}{privileged.pk}/change/")
    assert page.status_code == 200
    assert 'name="email"' not in page.content.decode()


def test_a_superuser_grants_privileges(admin_client, admins_group):
    customer = UserFactory()

    response = admin_client.post(
        f"{USERS}{customer.pk}/change/",
        user_form(customer, is_staff="on", groups=[admins_group.pk]),
    )

    assert response.status_code == 302
    assert privileges(customer) == (True, False, {"admins"}, set())


def test_staff_with_change_group_cannot_add_permissions_to_a_group(admins_group):
    # given: staff in the group, who may change groups
    editor = staff_client_with("auth.view_group", "auth.change_group")
    signed_in_user(editor).groups.add(admins_group)
    everything = Permission.objects.get(codename="change_user")
    # when
    response = editor.post(
        f"{GROUPS}{admins_group.pk}/change/",
        {"name": "admins", "permissions": [everything.pk]},
    )
    # then
    assert response.status_code == 302
    assert set(admins_group.permissions.values_list("codename", flat=True)) == {"delete_user"}


def test_a_superuser_sets_a_groups_permissions(admin_client, admins_group):
    change_user = Permission.objects.get(codename="change_user")

    response = admin_client.post(
        f"{GROUPS}{admins_group.pk}/change/", {"name": "admins", "permissions": [change_user.pk]}
    )

    assert response.status_code == 302
    assert set(admins_group.permissions.values_list("codename", flat=True)) == {"change_user"}
