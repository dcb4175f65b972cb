"""POST /oauth/revoke (RFC 7009): disconnects the installation, `[]` also for unknown tokens."""

import base64

import pytest
from django.conf import settings
from django.test import Client

from oauth_cli.models import Installation
from tests.oauth_cli.flow import connect, refresh


def me_status(access_token: str) -> int:
    return Client().get("/api/v2/me", HTTP_AUTHORIZATION=f"Bearer {access_token}").status_code


@pytest.mark.parametrize("which", ["refresh_token", "access_token"])
def test_revoking_any_token_disconnects_every_family(client, signed_in, user, tokens, which):
    second = connect(signed_in)  # another family of the same installation

    response = client.post(
        "/oauth/revoke",
        {"client_id": settings.CLI_CLIENT_ID, "token": tokens[which], "token_type_hint": which},
    )

    assert response.status_code == 200
    assert response.json() == []
    assert me_status(tokens["access_token"]) == 401
    assert me_status(second["access_token"]) == 401
    assert refresh(client, second["refresh_token"]).json()["error"] == "invalid_grant"
    assert not Installation.objects.filter(user=user).exists()


def test_unknown_token_answers_empty_array(client, tokens):
    response = client.post(
        "/oauth/revoke", {"client_id": settings.CLI_CLIENT_ID, "token": "not-a-token"}
    )

    assert response.status_code == 200
    assert response.json() == []
    assert me_status(tokens["access_token"]) == 200


def test_legacy_basic_credential_is_accepted(client, tokens):
    basic = base64.b64encode(f"{settings.CLI_CLIENT_ID}:".encode()).decode()

    response = client.post(
        "/oauth/revoke", {"token": tokens["refresh_token"]}, HTTP_AUTHORIZATION=f"Basic {basic}"
    )

    assert response.status_code == 200
    assert response.json() == []
    assert me_status(tokens["access_token"]) == 401


def test_other_client_is_invalid_client(client, tokens):
    response = client.post(
        "/oauth/revoke",
        {"client_id": "00000000-0000-4000-8000-000000000000", "token": tokens["access_token"]},
    )

    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"
    assert me_status(tokens["access_token"]) == 200
