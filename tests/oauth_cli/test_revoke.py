"""POST /oauth/revoke (RFC 7009): a live token disconnects the installation; a stale or
unknown one revokes nothing; `[]` either way."""

import base64
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken

from oauth_cli.models import Installation, TokenFamily
from oauth_cli.selectors import token_checksum
from tests.oauth_cli.flow import connect, refresh


def me_status(access_token: str) -> int:
    return Client().get("/api/v2/me", HTTP_AUTHORIZATION=f"Bearer {access_token}").status_code


@pytest.mark.parametrize("which", ["refresh_token", "access_token"])
def test_revoking_a_live_token_disconnects_every_family(client, signed_in, user, tokens, which):
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


def revoke(client, token: str, hint: str = "refresh_token"):
    return client.post(
        "/oauth/revoke",
        {"client_id": settings.CLI_CLIENT_ID, "token": token, "token_type_hint": hint},
    )


def test_a_rotated_refresh_token_revokes_nothing(client, signed_in, user, tokens):
    # given: this machine rotated its token; another machine holds a family of its own
    rotated = refresh(client, tokens["refresh_token"]).json()
    other_machine = connect(signed_in)

    response = revoke(client, tokens["refresh_token"])

    assert response.status_code == 200
    assert response.json() == []
    assert me_status(rotated["access_token"]) == 200
    assert me_status(other_machine["access_token"]) == 200
    assert Installation.objects.filter(user=user).exists()
    assert refresh(client, other_machine["refresh_token"]).status_code == 200
    assert refresh(client, rotated["refresh_token"]).status_code == 200  # not even its family


def test_a_token_of_a_revoked_family_revokes_nothing(client, signed_in, user, tokens):
    # given: the family was revoked by the reuse of a rotated refresh token
    rotated = refresh(client, tokens["refresh_token"]).json()
    assert refresh(client, tokens["refresh_token"]).json()["error"] == "invalid_grant"
    other_machine = connect(signed_in)

    response = revoke(client, rotated["refresh_token"])

    assert response.status_code == 200
    assert response.json() == []
    assert me_status(other_machine["access_token"]) == 200
    assert Installation.objects.filter(user=user).exists()


def test_a_refresh_token_of_an_expired_family_revokes_nothing(client, signed_in, user, tokens):
    other_machine = connect(signed_in)
    first_family = AccessToken.objects.get(
        token_checksum=token_checksum(tokens["access_token"])
    ).refresh_token.token_family
    TokenFamily.objects.filter(pk=first_family).update(expires_at=timezone.now())

    response = revoke(client, tokens["refresh_token"])

    assert response.status_code == 200
    assert me_status(other_machine["access_token"]) == 200
    assert Installation.objects.filter(user=user).exists()


def test_an_expired_access_token_revokes_nothing(client, signed_in, user, tokens):
    other_machine = connect(signed_in)
    AccessToken.objects.filter(token_checksum=token_checksum(tokens["access_token"])).update(
        expires=timezone.now() - timedelta(seconds=1)
    )

    response = revoke(client, tokens["access_token"], hint="access_token")

    assert response.status_code == 200
    assert response.json() == []
    assert me_status(other_machine["access_token"]) == 200
    assert Installation.objects.filter(user=user).exists()


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
