from django.conf import settings
from django.test import override_settings


def test_metadata_lists_every_field_with_absolute_urls(client, settings):
    # when
    response = client.get("/.well-known/oauth-authorization-server")

    # then
    assert response.status_code == 200
    assert response.json() == {
        "issuer": settings.BASE_URL,
        "authorization_endpoint": f"{settings.BASE_URL}/oauth/authorize",
        "token_endpoint": f"{settings.BASE_URL}/oauth/token",
        "revocation_endpoint": f"{settings.BASE_URL}/oauth/revoke",
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": ["admin"],
        "authorization_response_iss_parameter_supported": True,
    }
    assert response["Cache-Control"] == "public, max-age=3600"


def test_metadata_urls_follow_base_url(client, settings):
    settings.BASE_URL = "https://api.storefront.example"

    body = client.get("/.well-known/oauth-authorization-server").json()

    assert body["issuer"] == "https://api.storefront.example"
    assert body["token_endpoint"] == "https://api.storefront.example/oauth/token"


@override_settings(OAUTH_RATE_LIMIT_PER_MINUTE=2)
def test_metadata_rate_limit_uses_the_business_envelope(client):
    for _ in range(2):
        assert client.get("/.well-known/oauth-authorization-server").status_code == 200

    response = client.get("/.well-known/oauth-authorization-server")

    assert response.status_code == 429
    assert response.json()["code"] == "rate_limit_exceeded"
    assert response.json()["type"] == "rate_limit_error"
    assert int(response["Retry-After"]) >= 1


@override_settings(OAUTH_RATE_LIMIT_PER_MINUTE=1)
def test_every_protocol_endpoint_is_rate_limited_per_ip(client):
    requests = [
        lambda: client.get("/oauth/authorize"),
        lambda: client.post("/oauth/token", {"grant_type": "refresh_token"}),
        lambda: client.post("/oauth/revoke", {"token": "x"}),
    ]
    for send in requests:
        assert send().status_code != 429
        limited = send()
        assert limited.status_code == 429
        assert limited.json()["code"] == "rate_limit_exceeded"
        assert "Retry-After" in limited


def test_server_error_on_the_token_endpoint_uses_the_envelope(monkeypatch, tokens):
    from django.test import Client

    from oauth_cli.validators import CliOAuth2Validator

    def boom(*args, **kwargs):
        raise RuntimeError("database on fire")

    monkeypatch.setattr(CliOAuth2Validator, "validate_refresh_token", boom)
    client = Client(raise_request_exception=False)

    response = client.post(
        "/oauth/token",
        {
            "grant_type": "refresh_token",
            "client_id": settings.CLI_CLIENT_ID,
            "refresh_token": tokens["refresh_token"],
        },
    )

    assert response.status_code == 500
    assert response.json()["code"] == "api_error"
    assert response.json()["type"] == "api_error"
    assert "fire" not in response.content.decode()
