"""Passwords set through Django's forms (the admin, `createsuperuser`, `changepassword`) pass
Django's four validators: not like the username, at least 8 characters, not a common one, not
all digits."""

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from accounts.models import User
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

ADD_USER = "/admin/accounts/user/add/"


@pytest.fixture
def user_admin():
    staff = UserFactory(is_staff=True)
    staff.user_permissions.add(
        *Permission.objects.filter(codename__in=["add_user", "change_user", "view_user"])
    )
    client = Client()
    client.force_login(staff)
    return client


def add_user(client, username, password):
    return client.post(
        ADD_USER,
        {
            "username": username,
            "usable_password": "true",
            "password1": password,
            "password2": password,
        },
    )


@pytest.mark.parametrize(
    ("password", "refusal"),
    [
        ("demo", "too short"),
        ("password123", "too common"),
        ("40728193654", "entirely numeric"),
        ("margaret-hamilton", "too similar to the username"),
    ],
)
def test_the_admin_refuses_a_weak_password(user_admin, password, refusal):
    response = add_user(user_admin, "margaret-hamilton", password)

    assert response.status_code == 200
    assert refusal in response.content.decode()
    assert not User.objects.filter(username="margaret-hamilton").exists()


def test_the_admin_accepts_a_strong_password(user_admin):
    response = add_user(user_admin, "margaret-hamilton", "correct-horse-battery-staple-47")

    assert response.status_code == 302
    user = User.objects.get(username="margaret-hamilton")
    assert user.check_password("correct-horse-battery-staple-47")
