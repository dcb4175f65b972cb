import pytest
from django.test import Client
from rest_framework.test import APIClient

from oauth_cli.services import cli_application_ensure
from tests.oauth_cli.flow import connect


@pytest.fixture(autouse=True)
def cli_application(db):
    """The one OAuth client, as `manage.py ensure_cli_client` creates it."""
    return cli_application_ensure()


@pytest.fixture
def signed_in(user):
    """A browser session signed in as `user`."""
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def tokens(signed_in):
    """Token response of a completed CLI connection of `user`."""
    return connect(signed_in)


@pytest.fixture
def oauth_client(tokens):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {tokens['access_token']}")
    return client
