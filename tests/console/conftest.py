import pytest
from django.test import Client

from tests.factories import MembershipFactory, UserFactory


@pytest.fixture
def console(user, store):
    """A browser-like client signed in as `user`, owner of `store`, with CSRF checks on."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


@pytest.fixture
def staff_console(store):
    """A signed-in staff member of `store`."""
    member = UserFactory()
    MembershipFactory(user=member, store=store, role="staff")
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    return client


def csrf_token(client, path: str = "/console/") -> str:
    """The CSRF token a form page hands out (a GET sets the cookie)."""
    client.get(path)
    return client.cookies["csrftoken"].value


def post(client, path: str, data: dict | None = None, **extra):
    """A form POST with the page's CSRF token, as a browser sends it."""
    token = csrf_token(client)
    return client.post(path, {**(data or {}), "csrfmiddlewaretoken": token}, **extra)
