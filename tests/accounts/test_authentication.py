"""Bearer authentication (spec "Authentication" rule 4): 401 for anything but a live key."""

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiKey
from accounts.services import api_key_revoke
from tests.factories import make_api_key

pytestmark = pytest.mark.django_db


def assert_unauthenticated(response):
    assert response.status_code == 401
    body = response.json()
    assert body["type"] == "authentication_error"
    assert body["code"] == "unauthenticated"
    assert body["status"] == 401
    assert response["WWW-Authenticate"] == "Bearer"


def test_missing_authorization_header_is_401(api_client):
    assert_unauthenticated(api_client.get("/api/v2/me"))


def test_unknown_api_key_is_401(client_for):
    assert_unauthenticated(client_for("sf_" + "x" * 40).get("/api/v2/me"))


def test_token_of_no_known_kind_is_401(client_for):
    assert_unauthenticated(client_for("not-a-key").get("/api/v2/me"))


def test_revoked_api_key_is_401(user, store, client_for):
    # given
    secret = make_api_key(user)
    api_key_revoke(api_key=ApiKey.objects.get(user=user))
    # when / then
    assert_unauthenticated(client_for(secret).get("/api/v2/me"))


def test_key_of_a_deactivated_user_is_401(user, api_key, client_for):
    user.is_active = False
    user.save()
    assert_unauthenticated(client_for(api_key).get("/api/v2/me"))


@pytest.mark.parametrize(
    "header",
    [
        "Bearer",
        "Bearer  ",
        "Bearer one two",
        "Basic dXNlcjpwYXNz",
        "Token sf_abc",
        "sf_abc",
    ],
)
def test_malformed_authorization_header_is_401(header, api_key):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    assert_unauthenticated(client.get("/api/v2/me"))


def test_bearer_keyword_is_case_insensitive(api_key):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"bearer {api_key}")
    assert client.get("/api/v2/me").status_code == 200


def test_use_of_a_key_records_last_used_at(auth_client, user):
    before = timezone.now()
    auth_client.get("/api/v2/me")
    assert ApiKey.objects.get(user=user).last_used_at >= before


def test_api_key_is_stored_only_as_hash_with_visible_prefix(user, api_key):
    key = ApiKey.objects.get(user=user)
    assert api_key.startswith("sf_") and len(api_key) == 43
    assert key.prefix == api_key[:9]
    assert api_key not in (key.key_hash, key.prefix)


def test_me_needs_the_account_read_ability(user, store, client_for):
    secret = make_api_key(user, abilities=["coupon"])
    response = client_for(secret).get("/api/v2/me")
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"


def test_head_needs_the_same_ability_as_get(user, store, client_for):
    secret = make_api_key(user, abilities=["coupon"])
    assert client_for(secret).head("/api/v2/me").status_code == 403


def test_account_read_ability_alone_reads_me(user, store, client_for):
    secret = make_api_key(user, abilities=["account:read"])
    assert client_for(secret).get("/api/v2/me").status_code == 200
