"""The console's assets under production's storage: `collectstatic` with WhiteNoise's hashed,
compressed storage, and every page linking its stylesheet and script by their hashed names,
which WhiteNoise serves from STATIC_ROOT alone (no finders), cached for good. The rest of the
production settings are the admin's and the sign-in's, which tests/operations cover with
gunicorn; the console adds no setting of its own."""

import re

import pytest
from django.core.management import call_command
from django.test import Client

pytestmark = pytest.mark.django_db

PAGES = [
    "/console/",
    "/console/keys/",
    "/console/webhooks/",
    "/console/webhooks/secret",
    "/console/webhooks/event-types",
    "/console/deliveries/",
    "/console/events/",
    "/console/cli/",
]
ASSETS = (r"/static/console/console\.[0-9a-f]{12}\.css", r"/static/console/copy\.[0-9a-f]{12}\.js")


@pytest.fixture
def production_static(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": settings.HASHED_STATIC_FILES_STORAGE},
    }
    settings.WHITENOISE_USE_FINDERS = False
    settings.WHITENOISE_AUTOREFRESH = False
    # The console's files only: the other apps' are production's own test's.
    ignored = ["admin", "drf_spectacular_sidecar", "rest_framework", "django_filters"]
    call_command("collectstatic", interactive=False, ignore_patterns=ignored, verbosity=0)


def test_pages_link_hashed_assets_that_whitenoise_serves(production_static, user, store):
    browser = Client()
    browser.force_login(user)
    for path in PAGES:
        page = browser.get(path)
        assert page.status_code == 200, path
    for asset in ASSETS:
        url = re.search(asset, page.content.decode()).group(0)
        served = Client().get(url)
        assert served.status_code == 200
        assert "immutable" in served["Cache-Control"]
