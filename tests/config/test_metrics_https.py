"""/metrics and production's HTTPS redirect: scrapers on the private network read it over plain
HTTP (gunicorn speaks no TLS; a redirect would send them through the public proxy to whichever
instance answers), and anyone else gets what a path that does not exist gets, the redirect."""

import ipaddress
import re

import pytest
from django.test import Client

from tests.core.operations.metrics import SCRAPER_ADDRESS
from tests.settings_helpers import ROOT, production_environment, settings_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def production_redirect(settings):
    """The production settings' HTTPS redirect and its exemptions, in this process."""
    production = settings_of(
        production_environment(), "SECURE_SSL_REDIRECT", "SECURE_REDIRECT_EXEMPT"
    )
    settings.SECURE_SSL_REDIRECT = production["SECURE_SSL_REDIRECT"]
    settings.SECURE_REDIRECT_EXEMPT = production["SECURE_REDIRECT_EXEMPT"]
    settings.METRICS_ALLOWED_NETWORKS = (ipaddress.ip_network(SCRAPER_ADDRESS),)
    settings.METRICS_BEARER_TOKEN = "scrape-secret-1234567890"
    return production


def test_an_allowed_scraper_reads_metrics_over_plain_http(production_redirect):
    response = Client(REMOTE_ADDR=SCRAPER_ADDRESS).get("/metrics")

    assert response.status_code == 200
    assert b"storefront_" in response.content


def test_anyone_else_gets_the_redirect_a_path_that_does_not_exist_gets(production_redirect):
    stranger = Client(REMOTE_ADDR="203.0.113.9")

    refused = stranger.get("/metrics")
    unknown = stranger.get("/no-such-page")

    assert unknown.status_code == refused.status_code == 301
    assert refused["Location"] == "https://testserver/metrics"
    assert b"storefront_" not in refused.content
    # over HTTPS both are the ordinary 404
    assert stranger.get("/metrics", secure=True).status_code == 404


def test_a_wrong_token_over_plain_http_is_redirected_like_any_stranger(production_redirect):
    response = Client(REMOTE_ADDR="203.0.113.9").get(
        "/metrics", HTTP_AUTHORIZATION="Bearer wrong-1234567890"
    )
    assert response.status_code == 301


def test_the_configuration_page_names_every_path_exempt_from_the_https_redirect(
    production_redirect,
):
    page = (ROOT / "docs" / "configuration.md").read_text()
    [row] = [line for line in page.splitlines() if line.startswith("| `SECURE_SSL_REDIRECT`")]
    documented = set(re.findall(r"`/(\w+)`", row))
    exempt = {pattern.strip("^$") for pattern in production_redirect["SECURE_REDIRECT_EXEMPT"]}
    assert documented == exempt
