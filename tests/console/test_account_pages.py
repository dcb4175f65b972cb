"""Stores, API keys and the CLI connection through Django's test client: the rules are the
API's, each write is seen through the API afterwards, and a new key's secret is shown once."""

import re

import pytest
from django.test import Client

from accounts.models import ApiKey
from stores.models import Store
from tests.console.conftest import post
from tests.factories import MembershipFactory, StoreFactory

pytestmark = pytest.mark.django_db

SECRET = re.compile(r'<code id="new-secret">([^<]+)</code>')


def test_sign_in_is_required(client):
    response = client.get("/console/keys/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=/console/keys/")


def test_pages_are_framing_proof_without_inline_code(console):
    response = console.get("/console/")
    assert response.status_code == 200
    assert response["X-Frame-Options"] == "DENY"
    policy = response["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy
    assert "<style" not in response.content.decode()
    assert response["Cache-Control"] == "no-store"


def test_stores_lists_memberships_and_chooses_one(console, user, store):
    other = MembershipFactory(user=user, role="staff").store
    page = console.get("/console/").content.decode()
    assert store.name in page and other.name in page and "staff" in page

    response = post(console, "/console/stores/choose", {"store": other.pk})
    assert response.status_code == 302
    assert f"Store <strong>{other.name}</strong>" in console.get("/console/").content.decode()


def test_choosing_a_foreign_store_is_refused(console, other_store):
    response = post(console, "/console/stores/choose", {"store": other_store.pk})
    assert response.status_code == 403


def test_create_a_store_under_the_api_rules(console, user, auth_client):
    response = post(console, "/console/", {"name": "Second", "slug": "Second-Shop"})
    assert response.status_code == 302
    created = Store.objects.get(slug="second-shop")
    assert created.memberships.get().role == "owner"
    listed = auth_client.get("/api/v2/stores").json()["data"]
    assert "second-shop" in {s["slug"] for s in listed}

    # the API's limits: a reserved slug is a 422 beside its field; a second store within the
    # interval a 429 with Retry-After
    response = post(console, "/console/", {"name": "Admin", "slug": "admin"})
    assert response.status_code == 422
    assert 'id="slug-error"' in response.content.decode()
    response = post(console, "/console/", {"name": "Third", "slug": "third-shop"})
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0


def test_a_new_key_is_shown_once_and_answers_the_api(console, user, store, client_for):
    response = post(
        console,
        "/console/keys/",
        {"name": "deploy", "abilities": ["account:read", "webhook:read"]},
    )
    assert response.status_code == 302
    assert "sf_" not in response["Location"]
    page = console.get(response["Location"]).content.decode()
    secret = SECRET.search(page).group(1)
    # not in a cookie, not in the session
    assert all(secret not in morsel.value for morsel in console.cookies.values())
    assert secret not in str(dict(console.session))
    # never again
    assert secret not in console.get("/console/keys/").content.decode()

    me = client_for(secret).get("/api/v2/me")
    assert me.status_code == 200
    key = ApiKey.objects.get(name="deploy")
    assert (key.user, key.current_store, sorted(key.abilities)) == (
        user,
        store,
        ["account:read", "webhook:read"],
    )


def test_key_form_errors_stand_beside_their_fields(console):
    response = post(
        console,
        "/console/keys/",
        {"name": "x", "abilities": ["coupon"], "expires_at": "2001-01-01T00:00"},
    )
    assert response.status_code == 422
    assert 'id="expires_at-error"' in response.content.decode()
    assert not ApiKey.objects.filter(name="x").exists()

    response = post(console, "/console/keys/", {"name": "x", "abilities": ["root"]})
    assert response.status_code == 422
    assert 'id="abilities-error"' in response.content.decode()


def test_revoke_asks_then_the_key_is_refused(console, user, store, client_for):
    post(console, "/console/keys/", {"name": "old", "abilities": ["*"]})
    key = ApiKey.objects.get(name="old")
    secret = SECRET.search(console.get("/console/keys/").content.decode()).group(1)

    confirm = console.get(f"/console/keys/{key.pk}/revoke")
    assert confirm.status_code == 200 and "cannot be undone" in confirm.content.decode()
    response = post(console, f"/console/keys/{key.pk}/revoke")
    assert response.status_code == 302
    assert client_for(secret).get("/api/v2/me").status_code == 401


def test_another_users_key_cannot_be_revoked(console):
    stranger = MembershipFactory(store=StoreFactory()).user
    from tests.factories import make_api_key

    make_api_key(stranger)
    key = ApiKey.objects.get(user=stranger)
    assert post(console, f"/console/keys/{key.pk}/revoke").status_code == 404
    assert ApiKey.objects.get(pk=key.pk).revoked_at is None


def test_forms_need_the_csrf_token(user, store):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post("/console/keys/", {"name": "x", "abilities": ["*"]})
    assert response.status_code == 403
    assert not ApiKey.objects.exists()


def test_cli_connection_shows_and_disconnects(console, user, tokens, client_for):
    page = console.get("/console/cli/").content.decode()
    assert "Connected" in page
    response = post(console, "/console/cli/disconnect")
    assert response.status_code == 302
    assert client_for(tokens["access_token"]).get("/api/v2/me").status_code == 401
    assert "not connected" in console.get("/console/cli/").content.decode()


def test_a_secret_the_cache_cannot_keep_is_not_made(console, monkeypatch):
    from django.core.cache import cache

    def unreachable(*args, **kwargs):
        raise ConnectionError("Redis is down")

    monkeypatch.setattr(cache, "set", unreachable)
    response = post(console, "/console/keys/", {"name": "lost", "abilities": ["*"]})
    assert response.status_code == 503
    assert response["Retry-After"] == "30"
    assert not ApiKey.objects.filter(name="lost").exists()


def test_shown_once_on_make_runs_file_cache_too(console, settings, tmp_path):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(tmp_path),
        }
    }
    post(console, "/console/keys/", {"name": "local", "abilities": ["*"]})
    assert SECRET.search(console.get("/console/keys/").content.decode())
    assert not SECRET.search(console.get("/console/keys/").content.decode())


def test_a_staff_members_key_has_abilities_and_role(staff_console, store, client_for):
    post(staff_console, "/console/keys/", {"name": "staff key", "abilities": ["*"]})
    secret = SECRET.search(staff_console.get("/console/keys/").content.decode()).group(1)
    key = client_for(secret, HTTP_X_STORE=store.slug)
    assert key.get("/api/v2/webhook-channels").status_code == 200
    refused = key.post(
        "/api/v2/webhook-channels",
        {"url": "https://93.184.215.14/x", "allowed_notifications": ["order.completed"]},
        format="json",
    )
    assert refused.status_code == 403
