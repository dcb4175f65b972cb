"""The identity a process keeps for a credential (accounts/identity.py): reused while
its epochs in Redis are unchanged, and every write that can change an answer advances them, so
the next request reads the database again, whichever code made the write (a service, the admin's
model save, DOT). Each test first makes the identity current (two requests: read, confirmed),
so that without the epoch's advance the third request would be answered from the process.

The same on two real web processes: tests/accounts/test_identity_processes.py."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from accounts.models import ApiKey
from accounts.services import api_key_create, api_key_revoke
from core.api import ratelimit
from oauth_cli.models import Installation
from oauth_cli.services import installation_revoke
from stores.models import Membership
from tests.factories import MembershipFactory, make_api_key
from tests.oauth_cli.flow import refresh

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.core.api.urls")]

AREA_URL = "/api/v2/test-coupon-area"


def made_current(client, url=AREA_URL, **headers):
    """Two requests: the first reads the identity, the second confirms it under its epochs;
    from the third on it is answered from the process (tests/stores/test_request_layer.py)."""
    for _ in range(2):
        response = client.get(url, **headers)
        assert response.status_code == 200, response.content
    return response


def store_of(response) -> str:
    assert response.status_code == 200, response.content
    return response.json()["data"]["store"]


def test_a_current_identity_is_answered_from_the_process(
    auth_client, store, django_assert_num_queries
):
    made_current(auth_client)
    with django_assert_num_queries(0):
        assert store_of(auth_client.get(AREA_URL)) == store.slug


# --- API keys ----------------------------------------------------------------------------


def test_a_revoked_key_is_refused_on_the_next_request(user, auth_client):
    made_current(auth_client)
    api_key_revoke(api_key=ApiKey.objects.get(user=user))
    assert auth_client.get(AREA_URL).status_code == 401


def test_a_deleted_key_is_refused_on_the_next_request(user, auth_client):
    made_current(auth_client)
    ApiKey.objects.get(user=user).delete()  # the admin's delete
    assert auth_client.get(AREA_URL).status_code == 401


def test_a_key_whose_expiry_passes_is_refused_though_nothing_was_written(
    user, store, client_for, time_machine
):
    time_machine.move_to(timezone.now(), tick=False)
    key, secret = api_key_create(
        user=user,
        name="soon",
        abilities=["*"],
        expires_at=timezone.now() + timedelta(minutes=5),
    )
    client = client_for(secret)
    made_current(client)
    time_machine.move_to(key.expires_at + timedelta(seconds=1))
    response = client.get(AREA_URL)
    assert response.status_code == 401
    assert "expired at" in response.json()["message"]


def test_a_key_re_pinned_by_a_save_acts_on_its_new_store(user, store, client_for):
    second = MembershipFactory(user=user).store
    secret = make_api_key(user, current_store=store)
    client = client_for(secret)
    assert store_of(made_current(client)) == store.slug
    key = ApiKey.objects.get(user=user)
    key.current_store = second
    key.save()  # the admin's change form
    assert store_of(client.get(AREA_URL)) == second.slug


def test_a_store_unselected_from_a_key_is_refused_on_the_next_request(user, store, client_for):
    client = client_for(make_api_key(user, store_access="selected", stores=[store]))
    made_current(client, HTTP_X_STORE=store.slug)
    ApiKey.objects.get(user=user).stores.clear()
    assert client.get(AREA_URL, HTTP_X_STORE=store.slug).status_code == 403


# --- users ---------------------------------------------------------------------------------


def test_a_deactivated_user_is_refused_on_the_next_request(user, auth_client):
    made_current(auth_client)
    user.is_active = False
    user.save()  # the admin's user form
    assert auth_client.get(AREA_URL).status_code == 401


def test_a_deleted_user_is_refused_on_the_next_request(user, auth_client):
    made_current(auth_client)
    user.delete()
    assert auth_client.get(AREA_URL).status_code == 401


def test_a_renamed_user_is_shown_renamed_on_the_next_request(user, auth_client):
    made_current(auth_client, "/api/v2/me")
    user.username = "renamed"
    user.save()
    assert auth_client.get("/api/v2/me").json()["data"]["username"] == "renamed"


# --- memberships and stores ----------------------------------------------------------------


def test_a_removed_membership_is_refused_on_the_next_request(user, store, auth_client):
    made_current(auth_client, HTTP_X_STORE=store.slug)
    Membership.objects.get(user=user, store=store).delete()  # the admin's inline
    assert auth_client.get(AREA_URL, HTTP_X_STORE=store.slug).status_code == 403
    assert auth_client.get(AREA_URL).status_code == 403  # and no default store is left


def test_a_role_lowered_by_a_save_applies_on_the_next_request(user, store, auth_client):
    assert auth_client.post(AREA_URL).status_code == 201
    assert auth_client.post(AREA_URL).status_code == 201
    membership = Membership.objects.get(user=user, store=store)
    membership.role = "staff"
    membership.save()
    assert auth_client.post(AREA_URL).status_code == 403


def test_a_new_membership_is_seen_on_the_next_request(user, other_store, auth_client):
    # a store the key could not name becomes accessible
    assert auth_client.get(AREA_URL, HTTP_X_STORE=other_store.slug).status_code == 403
    made_current(auth_client)
    MembershipFactory(user=user, store=other_store)
    assert store_of(auth_client.get(AREA_URL, HTTP_X_STORE=other_store.slug)) == other_store.slug


def test_a_renamed_store_slug_is_seen_on_the_next_request(store, auth_client):
    old_slug = store.slug
    made_current(auth_client, HTTP_X_STORE=old_slug)
    store.slug = "renamed-store"
    store.save()  # the admin's store form
    assert auth_client.get(AREA_URL, HTTP_X_STORE=old_slug).status_code == 403
    assert store_of(auth_client.get(AREA_URL, HTTP_X_STORE="renamed-store")) == "renamed-store"


def test_a_deleted_current_store_is_refused_not_replaced(user, store, client_for):
    second = MembershipFactory(user=user).store
    client = client_for(make_api_key(user, current_store=second))
    assert store_of(made_current(client)) == second.slug
    second.delete()
    response = client.get(AREA_URL)
    assert response.status_code == 403
    assert "deleted" in response.json()["message"]


# --- OAuth access tokens -------------------------------------------------------------------


@pytest.fixture
def oauth_area_client(user, store, tokens, client_for):
    return client_for(tokens["access_token"], HTTP_X_STORE=store.slug)


def test_a_disconnected_installation_s_token_is_refused_on_the_next_request(
    user, oauth_area_client
):
    made_current(oauth_area_client)
    installation_revoke(installation_id=Installation.objects.get(user=user).pk)
    assert oauth_area_client.get(AREA_URL).status_code == 401


def test_a_token_revoked_by_the_revocation_endpoint_is_refused_on_the_next_request(
    tokens, oauth_area_client
):
    made_current(oauth_area_client)
    revoked = Client().post(
        "/oauth/revoke",
        {"client_id": settings.CLI_CLIENT_ID, "token": tokens["access_token"]},
    )
    assert revoked.status_code == 200
    assert oauth_area_client.get(AREA_URL).status_code == 401


def test_a_rotated_access_token_is_refused_on_the_next_request(tokens, oauth_area_client):
    made_current(oauth_area_client)
    assert refresh(Client(), tokens["refresh_token"]).status_code == 200
    assert oauth_area_client.get(AREA_URL).status_code == 401


# --- without Redis, and after Redis lost its keys ----------------------------------------


def test_without_redis_every_request_reads_the_database(
    user, auth_client, django_assert_max_num_queries
):
    made_current(auth_client)
    # the limiter's outage pause: no Redis round trip, so nothing kept is trusted
    ratelimit._cache_unavailable_until = ratelimit.time.time() + 60
    with django_assert_max_num_queries(10) as queries:
        made_current(auth_client)
    assert any("accounts_apikey" in query["sql"] for query in queries.captured_queries)
    # a write no signal reports (QuerySet.update) is seen at once
    ApiKey.objects.filter(user=user).update(revoked_at=timezone.now())
    assert auth_client.get(AREA_URL).status_code == 401


def test_after_redis_lost_its_keys_the_next_request_reads_the_database(
    user, auth_client, cache_cleared
):
    made_current(auth_client)
    ApiKey.objects.filter(user=user).update(revoked_at=timezone.now())  # no signal
    cache_cleared()  # a Redis restart without persistence
    assert auth_client.get(AREA_URL).status_code == 401
