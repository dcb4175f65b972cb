"""The one store resolver and permission check (docs/design.md "X-STORE", "Credentials, roles,
abilities"), through a minimal `coupon`-area view registered only in the test URLconf."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.urls import URLResolver, get_resolver
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView

from accounts.abilities import ROLE_STAFF
from accounts.permissions import HasAbility
from stores.access import StorePermission
from stores.models import Membership
from stores.views import PermissionsViewSet, StoreViewSet
from tests.factories import MembershipFactory, StoreFactory, make_api_key

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.core.api.urls")]

AREA_URL = "/api/v2/test-coupon-area"


def resolved_store(response):
    assert response.status_code in (200, 201), response.json()
    return response.json()["data"]["store"]


def assert_store_forbidden(response):
    assert response.status_code == 403
    body = response.json()
    assert body["code"] == "forbidden"
    assert body["param"] == "X-STORE"
    return body


def test_x_store_selects_the_store(user, store, client_for):
    second = MembershipFactory(user=user).store
    secret = make_api_key(user)
    assert resolved_store(client_for(secret, HTTP_X_STORE=second.slug).get(AREA_URL)) == second.slug


def test_x_store_is_case_insensitive(user, store, client_for):
    secret = make_api_key(user)
    response = client_for(secret, HTTP_X_STORE=store.slug.upper()).get(AREA_URL)
    assert resolved_store(response) == store.slug


def test_without_x_store_the_keys_current_store_is_used(user, store, client_for):
    second = MembershipFactory(user=user).store
    secret = make_api_key(user, current_store=second)
    assert resolved_store(client_for(secret).get(AREA_URL)) == second.slug


def test_without_x_store_or_current_store_the_first_store_is_used(user, client_for):
    stores = [MembershipFactory(user=user).store for _ in range(3)]
    secret = make_api_key(user)
    assert resolved_store(client_for(secret).get(AREA_URL)) == min(stores, key=lambda s: s.id).slug


def test_current_store_no_longer_accessible_is_403_not_another_store(user, store, client_for):
    # given: a key pinned to `second`; the user still belongs to `store` (lower id)
    second = MembershipFactory(user=user).store
    secret = make_api_key(user, current_store=second)
    # when: the membership of the pinned store is removed
    Membership.objects.filter(user=user, store=second).delete()
    # then: refused (spec: the first store is the fallback only with no current store)
    body = assert_store_forbidden(client_for(secret).get(AREA_URL))
    assert "current store" in body["message"]
    # naming an accessible store explicitly still works
    assert resolved_store(client_for(secret, HTTP_X_STORE=store.slug).get(AREA_URL)) == store.slug


def test_current_store_outside_the_keys_selected_stores_is_403(user, store, client_for):
    # given: the current store is one the user belongs to, but not one the key was restricted to
    second = MembershipFactory(user=user).store
    secret = make_api_key(user, store_access="selected", stores=[store], current_store=second)
    # then
    assert_store_forbidden(client_for(secret).get(AREA_URL))


def test_current_store_deleted_is_403_not_another_store(user, store, client_for):
    # given: a key pinned to `second`; the user also belongs to `store` (lower id)
    second = MembershipFactory(user=user).store
    secret = make_api_key(user, current_store=second)
    # when
    second.delete()
    # then: refused until re-pinned, never moved to `store`
    body = assert_store_forbidden(client_for(secret).get(AREA_URL))
    assert body["message"] == (
        "The API key's current store was deleted; select a store with X-STORE or give the key "
        "a new current store."
    )
    # naming an accessible store explicitly still works
    assert resolved_store(client_for(secret, HTTP_X_STORE=store.slug).get(AREA_URL)) == store.slug


def test_unknown_and_inaccessible_slugs_answer_the_same(auth_client, other_store):
    # when
    unknown = assert_store_forbidden(auth_client.get(AREA_URL, HTTP_X_STORE="no-such-store"))
    inaccessible = assert_store_forbidden(auth_client.get(AREA_URL, HTTP_X_STORE=other_store.slug))
    # then: nothing but the request id tells them apart
    unknown.pop("request_id")
    inaccessible.pop("request_id")
    assert unknown == inaccessible


def test_credential_with_no_store_at_all_is_403(user, client_for):
    secret = make_api_key(user)
    assert_store_forbidden(client_for(secret).get(AREA_URL))


def test_selected_store_key_sees_only_its_stores(user, store, client_for):
    # given: the user belongs to two stores; the key is restricted to the second one
    second = MembershipFactory(user=user).store
    secret = make_api_key(user, store_access="selected", stores=[second])
    client = client_for(secret)
    # then
    assert resolved_store(client.get(AREA_URL)) == second.slug
    assert_store_forbidden(client.get(AREA_URL, HTTP_X_STORE=store.slug))
    listed = client.get("/api/v2/stores").json()["data"]
    assert [s["slug"] for s in listed] == [second.slug]
    assert client.get(f"/api/v2/stores/{store.id}").status_code == 404
    assert client.get(f"/api/v2/stores/{second.id}").status_code == 200


def test_selected_store_key_cannot_reach_a_selected_store_without_membership(user, client_for):
    foreign = StoreFactory()
    secret = make_api_key(user, store_access="selected", stores=[foreign])
    assert_store_forbidden(client_for(secret, HTTP_X_STORE=foreign.slug).get(AREA_URL))


def test_removing_a_membership_cuts_access_at_once(user, store, auth_client):
    # given
    assert resolved_store(auth_client.get(AREA_URL, HTTP_X_STORE=store.slug)) == store.slug
    # when
    Membership.objects.filter(user=user, store=store).delete()
    # then: the same key, the very next request
    assert_store_forbidden(auth_client.get(AREA_URL, HTTP_X_STORE=store.slug))
    assert auth_client.get(f"/api/v2/stores/{store.id}").status_code == 404
    assert auth_client.get("/api/v2/stores").json()["data"] == []


def test_staff_role_can_read_but_not_write(user, client_for):
    staff_store = MembershipFactory(user=user, role=ROLE_STAFF).store
    client = client_for(make_api_key(user), HTTP_X_STORE=staff_store.slug)
    assert client.get(AREA_URL).status_code == 200
    response = client.post(AREA_URL, {}, format="json")
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"
    assert "coupon:write" in response.json()["message"]


def test_read_only_key_ability_can_read_but_not_write(user, store, client_for):
    client = client_for(make_api_key(user, abilities=["coupon:read"]))
    assert client.get(AREA_URL).status_code == 200
    assert client.post(AREA_URL, {}, format="json").status_code == 403


def test_area_ability_covers_read_and_write(user, store, client_for):
    client = client_for(make_api_key(user, abilities=["coupon"]))
    assert client.get(AREA_URL).status_code == 200
    assert client.post(AREA_URL, {}, format="json").status_code == 201


def test_key_without_the_area_ability_is_403(user, store, client_for):
    client = client_for(make_api_key(user, abilities=["invoice", "account:read"]))
    response = client.get(AREA_URL)
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"


def test_store_permission_without_credential_is_401(api_client, store):
    assert api_client.get(AREA_URL).status_code == 401


@pytest.fixture
def oauth_token(tokens):
    """An OAuth access token of `user` (the CLI's real authorize-then-token flow)."""
    return tokens["access_token"]


def test_oauth_credential_without_x_store_is_400(oauth_token, user, store, client_for):
    response = client_for(oauth_token).get(AREA_URL)
    assert response.status_code == 400
    assert response.json()["code"] == "bad_request"
    assert response.json()["param"] == "X-STORE"


def test_oauth_credential_with_x_store_acts_with_the_role(oauth_token, user, client_for):
    staff_store = MembershipFactory(user=user, role=ROLE_STAFF).store
    client = client_for(oauth_token, HTTP_X_STORE=staff_store.slug)
    assert resolved_store(client.get(AREA_URL)) == staff_store.slug
    assert client.post(AREA_URL, {}, format="json").status_code == 403
    permissions = client.get("/api/v2/permissions").json()["data"]
    assert permissions["credential_type"] == "oauth"


def test_account_operations_do_not_need_x_store_with_oauth(oauth_token, user, client_for):
    client = client_for(oauth_token)
    assert client.get("/api/v2/me").json()["data"]["credential_type"] == "oauth"
    assert client.get("/api/v2/stores").status_code == 200


@pytest.mark.parametrize("slug", ["bad\x00slug", "x" * 64, "sköp", "a b", "../etc"])
def test_impossible_slugs_answer_like_unknown_ones(slug, auth_client):
    assert_store_forbidden(auth_client.get(AREA_URL, HTTP_X_STORE=slug))


# Fail closed: a view that does not say what it requires is a configuration error.


class ViewWithoutArea(APIView):
    permission_classes = [StorePermission]

    def get(self, request):
        return Response({"data": {}})


class ViewWithoutPostAbility(APIView):
    permission_classes = [HasAbility]
    required_abilities = {"GET": "account:read"}

    def get(self, request):
        return Response({"data": {}})

    def post(self, request):
        return Response({"data": {}}, status=201)


def call_view(view_class, method, secret):
    request = getattr(APIRequestFactory(), method)(
        "/api/v2/unrouted", HTTP_AUTHORIZATION=f"Bearer {secret}"
    )
    return view_class.as_view()(request)


def test_store_permission_without_permission_area_fails_closed(api_key, caplog):
    response = call_view(ViewWithoutArea, "get", api_key)
    assert response.status_code == 500
    assert response.data["code"] == "api_error"
    [record] = [r for r in caplog.records if r.exc_info]
    assert record.exc_info[0] is ImproperlyConfigured


def test_has_ability_with_an_unlisted_served_method_fails_closed(api_key, caplog):
    assert call_view(ViewWithoutPostAbility, "get", api_key).status_code == 200
    response = call_view(ViewWithoutPostAbility, "post", api_key)
    assert response.status_code == 500
    [record] = [r for r in caplog.records if r.exc_info]
    assert record.exc_info[0] is ImproperlyConfigured


def test_has_ability_lets_unserved_methods_reach_the_405(api_key):
    assert call_view(ViewWithoutPostAbility, "delete", api_key).status_code == 405
    assert call_view(ViewWithoutPostAbility, "options", api_key).status_code == 405


def test_permissions_endpoint_opts_out_of_the_area_check(user, store, client_for):
    # a key with no area ability at all may still ask what it may do
    client = client_for(make_api_key(user, abilities=["account:read"]))
    response = client.get("/api/v2/permissions")
    assert response.status_code == 200
    assert response.json()["data"]["effective_abilities"] == ["account:read"]


def routed_api_views(patterns=None):
    """Every DRF view the project routes (tests' URLconf included), with the HTTP methods its
    route serves: a ViewSet's route maps methods to actions, an APIView serves its handlers."""
    for pattern in patterns if patterns is not None else get_resolver().url_patterns:
        if isinstance(pattern, URLResolver):
            yield from routed_api_views(pattern.url_patterns)
            continue
        view = getattr(pattern.callback, "cls", None)
        if view is None:
            continue
        actions = getattr(pattern.callback, "actions", None)
        if actions is not None:
            served = set(actions)
        else:
            served = {m for m in view.http_method_names if hasattr(view, m)}
        yield view, {m.upper() for m in served} - {"HEAD", "OPTIONS"}


def test_every_routed_view_says_what_it_requires():
    # The runtime check raises on the first request; this finds a forgotten rule before that.
    routes = list(routed_api_views())
    assert PermissionsViewSet in {view for view, _ in routes}
    assert (StoreViewSet, {"GET", "POST"}) in routes
    for view, served in routes:
        permissions = view.permission_classes
        if StorePermission in permissions:
            assert hasattr(view, "permission_area"), view
        if HasAbility in permissions:
            assert served <= set(view.required_abilities), view
