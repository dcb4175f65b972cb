"""Rotating SECRET_KEY (docs/production.md "Rotating SECRET_KEY"): the previous key, kept in
SECRET_KEY_FALLBACKS, keeps the admin's sessions and the sign-in pages' known browsers and
addresses valid until it is removed (docs/decisions/hardening.md, "Hardening IV", 8)."""

import os
import secrets

import pytest
from django.conf import settings
from django.db import connection
from django.test import override_settings

from tests.factories import UserFactory
from tests.oauth_cli.login import (
    CLI_LOGIN,
    NEW_ADDRESS,
    OWNER_IP,
    attack,
    browser_signed_in_before,
    sign_in,
    sign_in_from,
    signed_in,
)
from tests.settings_helpers import (
    LOAD_SETTINGS,
    RANDOM_KEY,
    production_environment,
    run_python,
    settings_of,
)

NEW_KEY = secrets.token_urlsafe(50)


def test_the_fallbacks_are_read_from_the_environment_comma_separated():
    older = secrets.token_urlsafe(50)
    environment = production_environment(SECRET_KEY_FALLBACKS=f"{RANDOM_KEY},{older}")

    assert settings_of(environment, "SECRET_KEY_FALLBACKS") == {
        "SECRET_KEY_FALLBACKS": [RANDOM_KEY, older]
    }


def test_production_refuses_a_weak_fallback():
    environment = production_environment(SECRET_KEY_FALLBACKS=f"{RANDOM_KEY},short")

    result = run_python(LOAD_SETTINGS, env=environment)

    assert result.returncode != 0
    assert "ImproperlyConfigured: Production needs every key of SECRET_KEY_FALLBACKS" in (
        result.stderr
    )


ADMIN_HOME_STATUS = (
    "import django; django.setup(); from django.test import Client; "
    "client = Client(); client.cookies['sessionid'] = {session!r}; "
    "print(client.get('/admin/').status_code)"
)


def admin_home_status(session: str, **keys: str) -> int:
    """GET /admin/ with the session cookie, in a process started with the environment `keys`
    (SECRET_KEY, SECRET_KEY_FALLBACKS) on this test's database."""
    database = connection.settings_dict
    environment = {
        **os.environ,
        "DATABASE_URL": f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}"
        f"/{database['NAME']}",
        **keys,
    }
    result = run_python(ADMIN_HOME_STATUS.format(session=session), env=environment)
    assert result.returncode == 0, result.stderr
    return int(result.stdout.split()[-1])


@pytest.mark.django_db(transaction=True)
def test_a_rotation_keeps_admin_sessions_until_the_fallback_is_removed(admin_client):
    # given: an admin signed in under the current key
    assert admin_client.get("/admin/").status_code == 200
    old_key = settings.SECRET_KEY
    session = admin_client.cookies[settings.SESSION_COOKIE_NAME].value
    environment = {"SECRET_KEY": NEW_KEY, "SECRET_KEY_FALLBACKS": old_key}

    # when the key is replaced without keeping the old one, the session is gone ...
    assert admin_home_status(session, SECRET_KEY=NEW_KEY, SECRET_KEY_FALLBACKS="") == 302
    # ... and with the old key as a fallback, it is still signed in
    assert admin_home_status(session, **environment) == 200


@pytest.fixture
def alice(db):
    return UserFactory(username="alice")


def test_a_rotation_keeps_known_browsers_and_addresses_until_the_fallback_is_removed(alice):
    # given: alice signed in from her browser and her address before the rotation, then
    # strangers failed at her username past the limit
    old_key = settings.SECRET_KEY
    browser = browser_signed_in_before(CLI_LOGIN)
    attack(CLI_LOGIN, settings.LOGIN_FAILURE_LIMIT + 2)

    # when the key is replaced without keeping the old one: her browser and address are new
    with override_settings(SECRET_KEY=NEW_KEY, SECRET_KEY_FALLBACKS=[]):
        refused = sign_in_from(browser, CLI_LOGIN, "alice", "password", ip=NEW_ADDRESS)
        assert refused.status_code == 429
        assert sign_in(CLI_LOGIN, "alice", "password", ip=OWNER_IP).status_code == 429

    # when the old key is kept as a fallback: both are still known
    with override_settings(SECRET_KEY=NEW_KEY, SECRET_KEY_FALLBACKS=[old_key]):
        assert signed_in(sign_in_from(browser, CLI_LOGIN, "alice", "password", ip=NEW_ADDRESS))
        assert signed_in(sign_in(CLI_LOGIN, "alice", "password", ip=OWNER_IP))

    # then: that sign-in made her browser known under the new key, which needs no fallback
    del browser.cookies[settings.SESSION_COOKIE_NAME]
    with override_settings(SECRET_KEY=NEW_KEY, SECRET_KEY_FALLBACKS=[]):
        assert signed_in(sign_in_from(browser, CLI_LOGIN, "alice", "password", ip="192.0.2.45"))
