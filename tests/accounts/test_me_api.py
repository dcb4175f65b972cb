import pytest

pytestmark = pytest.mark.django_db


def test_me_returns_the_user_with_string_id_and_credential_type(auth_client, user):
    # when
    response = auth_client.get("/api/v2/me")
    # then
    assert response.status_code == 200
    assert response.json() == {
        "data": {
            "id": str(user.pk),
            "username": user.username,
            "email": user.email,
            "credential_type": "api_key",
        }
    }
    assert response["X-Request-Id"].startswith("req_")


def test_me_without_credential_is_401_in_the_envelope(api_client):
    response = api_client.get("/api/v2/me")
    assert response.status_code == 401
    body = response.json()
    assert body["type"] == "authentication_error"
    assert body["code"] == "unauthenticated"
    assert body["request_id"] == response["X-Request-Id"]
