"""The official SDK's OAuth protocol calls that the CLI makes (discovery, the code exchange, the
refresh rotation, revocation) against the API under production settings. The consent form's
approve and refuse are a browser's, tested in headless Chromium (tests/oauth_cli)."""

import pytest
from django.conf import settings
from django.test import Client
from sellapp_sdk import AuthenticationError, SellAppClient

from oauth_cli.services import cli_application_ensure
from tests.oauth_cli.flow import REDIRECT_URI, approve, authorize_params, pkce_pair

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def cli(production_api) -> SellAppClient:
    """The SDK as the CLI uses it before it holds a token."""
    return SellAppClient(base_url=production_api, max_retries=0)


def test_discovery_names_our_endpoints(cli):
    metadata = cli.oauth.get_oauth_authorization_server_metadata()

    assert metadata.issuer == "https://api.example.com"
    assert metadata.token_endpoint == "https://api.example.com/oauth/token"
    assert metadata.code_challenge_methods_supported == ["S256"]


def test_exchange_refresh_and_revoke(cli, production_api, sdk_owner):
    user, store, _ = sdk_owner
    cli_application_ensure()
    browser = Client()
    browser.force_login(user)
    verifier, challenge = pkce_pair()
    code = approve(browser, authorize_params(code_challenge=challenge))["code"]

    issued = cli.oauth.exchange_oauth_token(
        body={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT_URI,
            "client_id": settings.CLI_CLIENT_ID,
            "code_verifier": verifier,
        }
    )
    rotated = cli.oauth.exchange_oauth_token(
        body={
            "grant_type": "refresh_token",
            "refresh_token": issued.refresh_token,
            "client_id": settings.CLI_CLIENT_ID,
        }
    )
    acting = SellAppClient(
        access_token=rotated.access_token, store=store.slug, base_url=production_api, max_retries=0
    )
    assert acting.account.get_account().data.username == user.username
    cli.oauth.revoke_oauth_token(token=rotated.access_token, client_id=settings.CLI_CLIENT_ID)

    assert rotated.refresh_token != issued.refresh_token
    with pytest.raises(AuthenticationError):
        acting.account.get_account()
