"""Only the official CLI is a client: another Application row, even a public authorization-code
one with the CLI's redirect URIs, is `invalid_client` everywhere, and the admin cannot create
one or change the CLI client."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, Grant

from oauth_cli.models import Installation
from oauth_cli.selectors import token_checksum
from tests.oauth_cli.flow import REDIRECT_URI, authorize_params, authorize_url, pkce_pair


@pytest.fixture
def rogue_application(db):
    """What someone could add next to the CLI client: same shape, another client_id."""
    return Application.objects.create(
        name="Look-alike",
        client_id=str(uuid.uuid4()),
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1/callback http://[::1]/callback",
        client_secret="",
        hash_client_secret=False,
        skip_authorization=False,
        algorithm=Application.NO_ALGORITHM,
    )


@pytest.mark.parametrize("accept", ["application/json", "text/html"])
def test_authorize_refuses_another_registered_client(signed_in, rogue_application, accept):
    params = authorize_params(client_id=rogue_application.client_id)

    response = signed_in.get(authorize_url(params), HTTP_ACCEPT=accept)

    assert response.status_code == 400
    assert "Location" not in response
    if accept == "text/html":
        assert b"invalid_client" in response.content
    else:
        assert response.json()["error"] == "invalid_client"


def test_token_refuses_another_registered_client_even_with_its_own_valid_code(
    client, user, rogue_application
):
    # given: a live code of the other client, and a connection it could attach to
    verifier, challenge = pkce_pair()
    Installation.objects.create(user=user, application=rogue_application)
    code = "rogue-code-" + uuid.uuid4().hex
    Grant.objects.create(
        application=rogue_application,
        user=user,
        code=token_checksum(code),  # as codes are stored
        expires=timezone.now() + timedelta(minutes=5),
        redirect_uri=REDIRECT_URI,
        scope="admin",
        code_challenge=challenge,
        code_challenge_method="S256",
    )

    # when
    response = client.post(
        "/oauth/token",
        {
            "grant_type": "authorization_code",
            "client_id": rogue_application.client_id,
            "code": code,
            "redirect_uri": REDIRECT_URI,
            "code_verifier": verifier,
        },
    )

    # then
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"
    assert not AccessToken.objects.exists()


def test_revoke_refuses_another_registered_client(client, tokens, rogue_application):
    response = client.post(
        "/oauth/revoke",
        {"client_id": rogue_application.client_id, "token": tokens["refresh_token"]},
    )

    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"
    assert Installation.objects.exists()


def test_admin_cannot_add_an_application(settings, admin_client):
    client = admin_client

    page = client.get("/admin/oauth2_provider/application/add/")
    post = client.post(
        "/admin/oauth2_provider/application/add/",
        {
            "client_id": str(uuid.uuid4()),
            "client_type": "public",
            "authorization_grant_type": "authorization-code",
            "redirect_uris": "http://127.0.0.1/callback",
            "name": "Sneaky",
            "algorithm": "",
        },
    )

    assert page.status_code == 403
    assert post.status_code == 403
    assert list(Application.objects.values_list("client_id", flat=True)) == [settings.CLI_CLIENT_ID]


def test_admin_shows_the_cli_client_read_only(cli_application, admin_client):
    client = admin_client
    url = f"/admin/oauth2_provider/application/{cli_application.pk}/change/"

    page = client.get(url)
    post = client.post(
        url,
        {
            "client_id": cli_application.client_id,
            "client_type": "confidential",
            "authorization_grant_type": "client-credentials",
            "skip_authorization": "on",
            "client_secret": "new-secret",
            "redirect_uris": "http://localhost/callback",
            "name": "Storefront CLI",
            "algorithm": "",
        },
    )
    delete = client.post(
        f"/admin/oauth2_provider/application/{cli_application.pk}/delete/", {"post": "yes"}
    )

    assert page.status_code == 200  # staff can still see it
    assert b'name="client_type"' not in page.content  # no editable field
    assert post.status_code == 403
    assert delete.status_code == 403
    cli_application.refresh_from_db()
    assert cli_application.client_type == Application.CLIENT_PUBLIC
    assert cli_application.authorization_grant_type == Application.GRANT_AUTHORIZATION_CODE
    assert cli_application.skip_authorization is False
    assert cli_application.client_secret == ""
    assert "localhost" not in cli_application.redirect_uris


@pytest.mark.parametrize("model", ["accesstoken", "refreshtoken", "grant", "idtoken"])
def test_admin_cannot_mint_tokens_or_codes_by_hand(model, admin_client):
    # Tokens and codes come only from the protocol; revocation goes through installations.
    client = admin_client

    assert client.get(f"/admin/oauth2_provider/{model}/").status_code == 200
    assert client.get(f"/admin/oauth2_provider/{model}/add/").status_code == 403
    assert client.post(f"/admin/oauth2_provider/{model}/add/", {}).status_code == 403
