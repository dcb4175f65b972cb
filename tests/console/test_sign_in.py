"""The console signs in through the sign-in the consent page uses: its page, its limits and
lockouts; `make run`'s seeding prints the console's address with the demo user's sign-in."""

import io
import logging

import pytest
from django.core.management import call_command
from django.test import Client

from tests.console.conftest import post
from tests.oauth_cli.login import fail, sign_in

pytestmark = pytest.mark.django_db


def test_the_seeded_demo_user_signs_in_to_the_console(settings):
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    assert f"console: {settings.BASE_URL}/console/  (sign in as demo, password demo)" in (
        out.getvalue()
    )
    browser = Client()
    response = browser.post(
        "/accounts/login/?next=/console/",
        {"username": "demo", "password": "demo", "next": "/console/"},
    )
    assert (response.status_code, response["Location"]) == (302, "/console/")
    page = browser.get("/console/").content.decode()
    assert "Demo Store" in page and "owner" in page


def test_the_sign_in_limits_apply(user, settings):
    fail("/accounts/login/", settings.AXES_FAILURE_LIMIT, username=user.username)
    response = sign_in("/accounts/login/?next=/console/", user.username, "password")
    assert response.status_code == 429


def test_a_new_secret_is_in_no_log_line(console, caplog):
    caplog.set_level(logging.DEBUG)
    post(console, "/console/keys/", {"name": "k", "abilities": ["*"]})
    page = console.get("/console/keys/").content.decode()
    secret = page.split('<code id="new-secret">')[1].split("<")[0]
    post(console, "/console/webhooks/secret", {"generate": "1"})
    signing = console.get("/console/webhooks/secret").content.decode()
    signing_secret = signing.split('<code id="new-secret">')[1].split("<")[0]
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert secret not in logged and signing_secret not in logged
