"""The grant model `account` seen from the API: /me, /stores, X-STORE, installation, v1."""

import uuid

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from oauth_cli.models import Installation
from stores.models import Membership
from tests.factories import MembershipFactory, StoreFactory


def test_me_reports_oauth(oauth_client, user):
    response = oauth_client.get("/api/v2/me")

    assert response.status_code == 200
    assert response.json()["data"]["credential_type"] == "oauth"
    assert response.json()["data"]["id"] == str(user.pk)


def test_stores_lists_current_and_future_stores(oauth_client, user, store):
    assert [s["slug"] for s in oauth_client.get("/api/v2/stores").json()["data"]] == [store.slug]

    later = MembershipFactory(user=user).store  # joined after connecting

    slugs = {s["slug"] for s in oauth_client.get("/api/v2/stores").json()["data"]}
    assert slugs == {store.slug, later.slug}


def test_store_operation_requires_x_store(oauth_client, store):
    response = oauth_client.get("/api/v2/permissions")

    assert response.status_code == 400
    assert response.json()["param"] == "X-STORE"


def test_store_operation_with_x_store_uses_the_role(oauth_client, store):
    response = oauth_client.get("/api/v2/permissions", HTTP_X_STORE=store.slug)

    assert response.status_code == 200
    data = response.json()["data"]
    assert data["credential_type"] == "oauth"
    assert data["store_access"] == "all"
    assert "coupon:write" in data["effective_abilities"]


def test_other_users_store_is_forbidden(oauth_client, other_store):
    response = oauth_client.get("/api/v2/permissions", HTTP_X_STORE=other_store.slug)

    assert response.status_code == 403


def test_removing_the_membership_revokes_store_access_at_once(oauth_client, user, store):
    assert oauth_client.get("/api/v2/permissions", HTTP_X_STORE=store.slug).status_code == 200

    Membership.objects.filter(user=user, store=store).delete()

    response = oauth_client.get("/api/v2/permissions", HTTP_X_STORE=store.slug)
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"
    assert oauth_client.get("/api/v2/stores").json()["data"] == []


def test_staff_role_limits_the_token(oauth_client, user):
    staff_store = MembershipFactory(user=user, role="staff").store

    data = oauth_client.get("/api/v2/permissions", HTTP_X_STORE=staff_store.slug).json()["data"]

    assert "coupon:read" in data["effective_abilities"]
    assert "coupon:write" not in data["effective_abilities"]


def test_user_without_store_connects_and_creates_one(db):
    from django.test import Client

    from tests.factories import UserFactory
    from tests.oauth_cli.flow import connect

    newcomer = UserFactory()
    browser = Client()
    browser.force_login(newcomer)
    tokens = connect(browser)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {tokens['access_token']}")
    assert api.get("/api/v2/stores").json()["data"] == []

    response = api.post(
        "/api/v2/stores",
        {"name": "First shop", "slug": "first-shop-" + uuid.uuid4().hex[:6]},
        format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
    )

    assert response.status_code == 201, response.content
    slug = response.json()["data"]["slug"]
    assert api.get("/api/v2/permissions", HTTP_X_STORE=slug).status_code == 200


def test_v1_refuses_oauth_tokens(oauth_client, store):
    response = oauth_client.get("/api/v1/invoices", HTTP_X_STORE=store.slug)

    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"


def test_installation_resource(oauth_client, user):
    installation = Installation.objects.get(user=user)

    response = oauth_client.get("/api/v2/oauth/installation")

    assert response.status_code == 200
    assert response.json() == {
        "data": {
            "id": str(installation.id),
            "client_id": settings.CLI_CLIENT_ID,
            "grant_model": "account",
            "scopes": ["admin"],
            "created_at": installation.created_at.isoformat().replace("+00:00", "Z"),
        }
    }


def test_reading_the_installation_takes_two_queries(oauth_client):
    # the access token (with its installation, for the credential), then the CLI installation
    with CaptureQueriesContext(connection) as queries:
        assert oauth_client.get("/api/v2/oauth/installation").status_code == 200

    assert len(queries) == 2


def test_delete_installation_disconnects(oauth_client, user, signed_in, tokens):
    from oauth2_provider.models import Grant

    from oauth_cli.selectors import token_checksum
    from tests.oauth_cli.flow import approve, authorize_params, refresh

    pending_code = approve(signed_in, authorize_params())["code"]

    response = oauth_client.delete("/api/v2/oauth/installation")

    assert response.status_code == 204
    assert response.content == b""
    assert not Installation.objects.filter(user=user).exists()
    assert not Grant.objects.filter(code=token_checksum(pending_code)).exists()
    assert oauth_client.get("/api/v2/me").status_code == 401
    assert refresh(signed_in, tokens["refresh_token"]).json()["error"] == "invalid_grant"


@pytest.mark.parametrize("method", ["get", "delete"])
def test_installation_refuses_api_keys(auth_client, method):
    response = getattr(auth_client, method)("/api/v2/oauth/installation")

    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"


def test_installation_needs_a_credential(api_client):
    assert api_client.get("/api/v2/oauth/installation").status_code == 401


def test_expired_access_token_is_unauthenticated(oauth_client):
    from datetime import timedelta

    from django.utils import timezone
    from oauth2_provider.models import AccessToken

    AccessToken.objects.update(expires=timezone.now() - timedelta(seconds=1))

    assert oauth_client.get("/api/v2/me").status_code == 401


def test_token_without_admin_scope_is_not_a_credential(oauth_client):
    from oauth2_provider.models import AccessToken

    AccessToken.objects.update(scope="read")

    assert oauth_client.get("/api/v2/me").status_code == 401


def test_inactive_user_token_is_not_a_credential(oauth_client, user):
    user.is_active = False
    user.save()

    assert oauth_client.get("/api/v2/me").status_code == 401


def test_store_created_later_is_covered(oauth_client, user):
    store = StoreFactory()
    MembershipFactory(user=user, store=store)

    assert oauth_client.get("/api/v2/permissions", HTTP_X_STORE=store.slug).status_code == 200


@pytest.mark.parametrize("method", ["post", "put", "patch", "options"])
def test_installation_answers_other_methods_with_405_and_allow(oauth_client, method):
    response = getattr(oauth_client, method)("/api/v2/oauth/installation")

    assert response.status_code == 405
    assert response.json()["code"] == "method_not_allowed"
    assert response["Allow"] == "GET, DELETE, HEAD"


def test_a_token_whose_installation_is_gone_is_refused_on_its_next_request(oauth_client, user):
    from oauth_cli.models import TokenFamily

    # given: a working token; when: its installation disappears without the services (raw
    # deletes, the access token kept)
    assert oauth_client.get("/api/v2/me").status_code == 200
    TokenFamily.objects.filter(installation__user=user)._raw_delete(TokenFamily.objects.db)
    Installation.objects.filter(user=user)._raw_delete(Installation.objects.db)
    # then: the bearer resolver, which reads the installation with the token, refuses it
    assert oauth_client.get("/api/v2/me").status_code == 401
