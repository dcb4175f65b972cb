"""The shared API layer every endpoint pays for: its query count is pinned
(none once an identity is kept and current), and the credential and store lookups
still see every change on the next request (the kept identity's cases:
tests/accounts/test_identity_cache.py)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import ApiKey
from accounts.services import api_key_revoke
from stores.models import Membership
from tests.factories import MembershipFactory, make_api_key

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.core.api.urls")]

AREA_URL = "/api/v2/test-coupon-area"


def served_store(response):
    assert response.status_code == 200, response.json()
    return response.json()["data"]["store"]


@pytest.mark.parametrize("store_access", ["all", "selected"])
@pytest.mark.parametrize("named", [False, True], ids=["default store", "x-store"])
def test_a_store_request_of_a_current_identity_takes_no_query(
    user, store, client_for, django_assert_num_queries, store_access, named
):
    # given: the key read on its first request, and confirmed current on its second
    # (accounts/identity.py); the first also records last_used_at (a write, once a minute)
    secret = make_api_key(user, store_access=store_access, stores=[store])
    client = client_for(secret, **({"HTTP_X_STORE": store.slug} if named else {}))
    for _ in range(2):
        served_store(client.get(AREA_URL))
    # when / then: credential, user and membership from the process, one Redis round trip
    with django_assert_num_queries(0):
        assert served_store(client.get(AREA_URL)) == store.slug


def test_an_account_request_of_a_current_identity_takes_no_query(
    auth_client, django_assert_num_queries
):
    for _ in range(2):
        auth_client.get("/api/v2/me")
    with django_assert_num_queries(0):
        assert auth_client.get("/api/v2/me").status_code == 200


def test_a_key_revoked_between_two_requests_fails_the_second(user, store, api_key, auth_client):
    served_store(auth_client.get(AREA_URL))
    api_key_revoke(api_key=ApiKey.objects.get(user=user))
    assert auth_client.get(AREA_URL).status_code == 401


def test_a_key_expiring_between_two_requests_fails_the_second(user, store, auth_client):
    served_store(auth_client.get(AREA_URL))
    ApiKey.objects.filter(user=user).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = auth_client.get(AREA_URL)
    assert response.status_code == 401
    assert "expired at" in response.json()["message"]


def test_a_user_deactivated_between_two_requests_fails_the_second(user, store, auth_client):
    served_store(auth_client.get(AREA_URL))
    user.is_active = False
    user.save(update_fields=["is_active"])
    assert auth_client.get(AREA_URL).status_code == 401


def test_a_membership_removed_between_two_requests_moves_the_key_to_its_next_store(
    user, store, auth_client
):
    # given: two stores; without X-STORE the key acts on the first
    second = MembershipFactory(user=user).store
    assert served_store(auth_client.get(AREA_URL)) == store.slug
    # when
    Membership.objects.filter(user=user, store=store).delete()
    # then: the very next request
    assert served_store(auth_client.get(AREA_URL)) == second.slug
    Membership.objects.filter(user=user, store=second).delete()
    assert auth_client.get(AREA_URL).status_code == 403


@pytest.mark.parametrize("headers", [{}, {"HTTP_X_STORE": "STORE"}], ids=["default", "x-store"])
def test_a_store_unselected_between_two_requests_is_refused_on_the_next(
    user, store, client_for, headers
):
    secret = make_api_key(user, store_access="selected", stores=[store])
    client = client_for(secret, **{name: store.slug for name in headers})
    served_store(client.get(AREA_URL))
    ApiKey.objects.get(user=user).stores.clear()
    assert client.get(AREA_URL).status_code == 403


def test_a_current_store_left_between_two_requests_is_refused_not_replaced(user, store, client_for):
    # given: a key pinned to its second store
    second = MembershipFactory(user=user).store
    client = client_for(make_api_key(user, current_store=second))
    assert served_store(client.get(AREA_URL)) == second.slug
    # when
    Membership.objects.filter(user=user, store=second).delete()
    # then: 403 on the next request, never the first store
    assert client.get(AREA_URL).status_code == 403


def test_a_role_changed_between_two_requests_applies_to_the_next(user, store, auth_client):
    assert auth_client.post(AREA_URL).status_code == 201
    Membership.objects.filter(user=user, store=store).update(role="staff")
    assert auth_client.post(AREA_URL).status_code == 403
