"""POST /oauth/token: code exchange with PKCE, replay, expiry, rotation, reuse, lifetime."""

import base64
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client, override_settings
from django.utils import timezone
from oauth2_provider.models import AccessToken, Grant, RefreshToken

from oauth_cli.models import TokenFamily
from oauth_cli.selectors import token_checksum
from tests.oauth_cli.flow import (
    approve,
    authorize_params,
    connect,
    exchange,
    pkce_pair,
    refresh,
)


@pytest.fixture
def code_and_verifier(signed_in):
    verifier, challenge = pkce_pair()
    callback = approve(signed_in, authorize_params(code_challenge=challenge))
    return callback["code"], verifier


def me_status(access_token: str) -> int:
    return Client().get("/api/v2/me", HTTP_AUTHORIZATION=f"Bearer {access_token}").status_code


def test_exchange_returns_bearer_tokens(client, code_and_verifier):
    code, verifier = code_and_verifier

    response = exchange(client, code, verifier)

    assert response.status_code == 200
    body = response.json()
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 3600
    assert body["scope"] == "admin"
    assert body["access_token"] and body["refresh_token"]
    assert response["Cache-Control"] == "no-store"
    assert not Grant.objects.filter(code=token_checksum(code)).exists()
    token = AccessToken.objects.get()
    assert token.token == ""  # only the SHA-256 checksum is stored
    assert timedelta(seconds=3590) < token.expires - timezone.now() <= timedelta(seconds=3600)


def test_code_lives_at_most_ten_minutes(code_and_verifier):
    grant = Grant.objects.get(code=token_checksum(code_and_verifier[0]))

    assert grant.expires - timezone.now() <= timedelta(minutes=10)


@pytest.mark.parametrize(
    "verifier",
    ["wrong-verifier-" + "x" * 40, None],
)
def test_pkce_mismatch_is_invalid_grant(client, code_and_verifier, verifier):
    code, _ = code_and_verifier

    response = exchange(client, code, verifier) if verifier else exchange(client, code, "")

    assert response.status_code == 400
    assert response.json()["error"] in {"invalid_grant", "invalid_request"}
    assert not AccessToken.objects.exists()


def test_pkce_with_plain_verifier_equal_to_challenge_is_refused(client, signed_in):
    _, challenge = pkce_pair()
    code = approve(signed_in, authorize_params(code_challenge=challenge))["code"]

    response = exchange(client, code, challenge)

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


def test_wrong_redirect_uri_is_refused(client, code_and_verifier):
    code, verifier = code_and_verifier

    response = exchange(client, code, verifier, redirect_uri="http://127.0.0.1:1/callback")

    assert response.status_code == 400
    assert response.json()["error"] in {"invalid_grant", "invalid_request"}
    assert not AccessToken.objects.exists()


def test_expired_code_is_refused(client, code_and_verifier):
    code, verifier = code_and_verifier
    Grant.objects.filter(code=token_checksum(code)).update(
        expires=timezone.now() - timedelta(seconds=1)
    )

    response = exchange(client, code, verifier)

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


def test_replayed_code_is_refused_and_revokes_the_tokens_it_issued(client, code_and_verifier):
    code, verifier = code_and_verifier
    first = exchange(client, code, verifier).json()
    assert me_status(first["access_token"]) == 200

    # when
    replay = exchange(client, code, verifier)

    # then
    assert replay.status_code == 400
    assert replay.json()["error"] == "invalid_grant"
    assert me_status(first["access_token"]) == 401
    assert refresh(client, first["refresh_token"]).json()["error"] == "invalid_grant"
    assert TokenFamily.objects.get().revoked_at is not None


@pytest.mark.parametrize("client_id", ["00000000-0000-4000-8000-000000000000", "not-a-uuid", None])
def test_other_clients_are_invalid_client(client, code_and_verifier, client_id):
    code, verifier = code_and_verifier
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": "http://127.0.0.1:53682/callback",
        "code_verifier": verifier,
    }
    if client_id:
        data["client_id"] = client_id

    response = client.post("/oauth/token", data)

    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"


def _basic(client_id: str, secret: str = "") -> str:
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def test_legacy_basic_client_credential_is_accepted(client, code_and_verifier):
    code, verifier = code_and_verifier

    response = client.post(
        "/oauth/token",
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": "http://127.0.0.1:53682/callback",
            "code_verifier": verifier,
        },
        HTTP_AUTHORIZATION=_basic(settings.CLI_CLIENT_ID),
    )

    assert response.status_code == 200
    assert response.json()["token_type"] == "Bearer"


def test_basic_credential_with_a_secret_is_refused(client, code_and_verifier):
    code, verifier = code_and_verifier

    response = exchange(
        client, code, verifier, HTTP_AUTHORIZATION=_basic(settings.CLI_CLIENT_ID, "guess")
    )

    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"grant_type": "client_credentials"}, "unauthorized_client"),
        ({"grant_type": "password", "password": "password"}, "unauthorized_client"),
        ({"grant_type": "implicit"}, "unsupported_grant_type"),
        ({"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer"}, "unsupported_grant_type"),
    ],
)
def test_other_grant_types_are_refused(client, user, data, error):
    data = {**data, "username": user.username, "client_id": settings.CLI_CLIENT_ID}

    response = client.post("/oauth/token", data)

    assert response.status_code in (400, 401)
    assert response.json()["error"] == error
    assert not AccessToken.objects.exists()


def test_refresh_rotates_the_refresh_token(client, tokens):
    # when
    response = refresh(client, tokens["refresh_token"])

    # then
    assert response.status_code == 200
    rotated = response.json()
    assert rotated["refresh_token"] != tokens["refresh_token"]
    assert rotated["access_token"] != tokens["access_token"]
    assert rotated["expires_in"] == 3600
    assert rotated["scope"] == "admin"
    assert me_status(rotated["access_token"]) == 200
    assert me_status(tokens["access_token"]) == 401
    assert RefreshToken.objects.filter(revoked__isnull=True).count() == 1


def test_reusing_a_rotated_refresh_token_revokes_the_family(client, tokens):
    rotated = refresh(client, tokens["refresh_token"]).json()

    # when: the old one is presented again
    reuse = refresh(client, tokens["refresh_token"])

    # then
    assert reuse.status_code == 400
    assert reuse.json()["error"] == "invalid_grant"
    assert me_status(rotated["access_token"]) == 401
    assert refresh(client, rotated["refresh_token"]).json()["error"] == "invalid_grant"
    assert TokenFamily.objects.get().revoked_at is not None


def test_reuse_revokes_only_its_own_family(client, signed_in, tokens):
    other = connect(signed_in)
    refresh(client, tokens["refresh_token"])

    refresh(client, tokens["refresh_token"])

    assert me_status(other["access_token"]) == 200


def test_family_lives_at_most_ninety_days(client, tokens):
    family = TokenFamily.objects.get()
    assert family.expires_at - family.created_at == timedelta(days=90)
    TokenFamily.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    response = refresh(client, tokens["refresh_token"])

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


def test_refresh_requires_the_cli_client_id(client, tokens):
    response = client.post(
        "/oauth/token", {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
    )

    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"


def test_unknown_refresh_token_is_invalid_grant(client):
    response = refresh(client, "nope")

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


def test_exchange_after_disconnect_issues_nothing(client, signed_in, user):
    verifier, challenge = pkce_pair()
    code = approve(signed_in, authorize_params(code_challenge=challenge))["code"]
    from oauth_cli.models import Installation
    from oauth_cli.services import installation_revoke

    installation_revoke(installation_id=Installation.objects.get(user=user).pk)

    response = exchange(client, code, verifier)

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"
    assert not AccessToken.objects.exists()


@override_settings(OAUTH_RATE_LIMIT_PER_MINUTE=3)
def test_token_endpoint_is_rate_limited_per_client_ip(client):
    for _ in range(3):
        assert refresh(client, "nope").status_code == 400

    limited = refresh(client, "nope")
    other_ip = refresh(client, "nope", REMOTE_ADDR="10.0.0.9")

    assert limited.status_code == 429
    assert limited.json()["code"] == "rate_limit_exceeded"
    assert limited.json()["request_id"].startswith("req_")
    assert int(limited["Retry-After"]) >= 1
    assert other_ip.status_code == 400


def test_malformed_token_requests_are_protocol_errors(client):
    for data in ({}, {"grant_type": "authorization_code", "client_id": settings.CLI_CLIENT_ID}):
        response = client.post("/oauth/token", data)
        assert 400 <= response.status_code < 500
        assert "error" in response.json()


@pytest.mark.parametrize("field", ["code", "code_verifier", "redirect_uri", "client_id"])
def test_nul_bytes_are_protocol_errors_not_500(client, code_and_verifier, field):
    code, verifier = code_and_verifier
    data = {
        "grant_type": "authorization_code",
        "client_id": settings.CLI_CLIENT_ID,
        "code": code,
        "redirect_uri": "http://127.0.0.1:53682/callback",
        "code_verifier": verifier,
    }
    data[field] += "\x00"

    response = client.post("/oauth/token", data)

    assert 400 <= response.status_code < 500
    assert "error" in response.json()


def test_nul_bytes_in_refresh_and_revoke_are_handled(client):
    assert refresh(client, "abc\x00").json()["error"] == "invalid_grant"
    revoke = client.post("/oauth/revoke", {"client_id": settings.CLI_CLIENT_ID, "token": "a\x00"})
    assert revoke.status_code == 200


def test_deactivated_user_cannot_exchange_a_code(client, code_and_verifier, user):
    code, verifier = code_and_verifier
    user.is_active = False
    user.save()

    response = exchange(client, code, verifier)

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"
    assert not AccessToken.objects.exists()


def test_deactivated_user_cannot_refresh(client, tokens, user):
    user.is_active = False
    user.save()

    response = refresh(client, tokens["refresh_token"])

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"
    assert AccessToken.objects.filter(source_refresh_token__isnull=False).count() == 0
    # reactivated, the untouched family works again: deactivation refuses, it does not revoke
    user.is_active = True
    user.save()
    assert refresh(client, tokens["refresh_token"]).status_code == 200


def test_rotation_revokes_the_old_refresh_token_and_deletes_its_access_token(client, tokens):
    old = RefreshToken.objects.get()
    old_access_token_id = old.access_token_id

    response = refresh(client, tokens["refresh_token"])

    assert response.status_code == 200
    old.refresh_from_db()
    assert old.revoked is not None
    assert old.access_token_id is None
    assert not AccessToken.objects.filter(pk=old_access_token_id).exists()
    rotated = response.json()
    successor = AccessToken.objects.get(source_refresh_token=old)
    new = RefreshToken.objects.get(revoked__isnull=True)
    assert successor.token_checksum == token_checksum(rotated["access_token"])
    assert new.token_checksum == token_checksum(rotated["refresh_token"])
    assert successor.token == new.token == ""  # only checksums at rest
    assert new.access_token_id == successor.pk
    assert new.token_family == old.token_family
    assert (successor.user_id, successor.application_id) == (old.user_id, old.application_id)
    assert (new.user_id, new.application_id) == (old.user_id, old.application_id)
    assert successor.scope == "admin"
    assert successor.resource == new.resource == []
    assert successor.expires > timezone.now() + timedelta(seconds=3590)
    assert successor.id_token_id is None


def test_refresh_of_a_revoked_family_revokes_its_live_token(client, tokens):
    TokenFamily.objects.update(revoked_at=timezone.now())

    response = refresh(client, tokens["refresh_token"])

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()
    assert not AccessToken.objects.exists()


def test_refresh_token_without_its_access_token_is_invalid_grant(client, tokens):
    """DOT's orphan rule: its access token was deleted out of band (not by a rotation)."""
    AccessToken.objects.all().delete()

    response = refresh(client, tokens["refresh_token"])

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


def test_refresh_token_idle_past_its_expiry_is_invalid_grant(client, tokens):
    """DOT's sliding expiry: REFRESH_TOKEN_EXPIRE_SECONDS after its access token expired."""
    idle = timedelta(seconds=settings.OAUTH2_PROVIDER["REFRESH_TOKEN_EXPIRE_SECONDS"])
    AccessToken.objects.update(expires=timezone.now() - idle)

    response = refresh(client, tokens["refresh_token"])

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


def test_app_authorized_receivers_get_the_rotated_access_token(client, tokens):
    from oauth2_provider.signals import app_authorized

    received = []

    def receiver(sender, request, token, **kwargs):
        received.append(token)

    app_authorized.connect(receiver)
    try:
        response = refresh(client, tokens["refresh_token"])
    finally:
        app_authorized.disconnect(receiver)

    assert response.status_code == 200
    assert [token.pk for token in received] == [AccessToken.objects.get().pk]


def test_omitted_scope_yields_an_admin_token(client, signed_in):
    verifier, challenge = pkce_pair()
    params = authorize_params(code_challenge=challenge, scope=None)
    assert "scope" not in params
    code = approve(signed_in, params)["code"]

    response = exchange(client, code, verifier)

    assert response.status_code == 200
    assert response.json()["scope"] == "admin"
    assert AccessToken.objects.get().scope == "admin"


def test_token_request_without_redirect_uri_is_refused(client, code_and_verifier):
    code, verifier = code_and_verifier

    response = client.post(
        "/oauth/token",
        {
            "grant_type": "authorization_code",
            "client_id": settings.CLI_CLIENT_ID,
            "code": code,
            "code_verifier": verifier,
        },
    )

    # two URIs are registered, so DOT has no default to fall back on: MissingRedirectURIError
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert "redirect" in response.json()["error_description"].lower()
    assert not AccessToken.objects.exists()
    assert Grant.objects.filter(
        code=token_checksum(code)
    ).exists()  # refused before the code was consumed
