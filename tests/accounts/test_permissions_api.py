"""GET /api/v2/permissions: key abilities, role permissions, and their intersection."""

import pytest

from accounts.abilities import ROLE_STAFF
from tests.factories import MembershipFactory, make_api_key

pytestmark = pytest.mark.django_db

AREAS = ("coupon", "event", "invoice", "order", "webhook")
ALL_AREA_PERMISSIONS = sorted(f"{a}:{op}" for a in AREAS for op in ("read", "write"))
READ_PERMISSIONS = sorted(f"{a}:read" for a in AREAS)


def test_owner_with_an_all_abilities_key(auth_client, store):
    response = auth_client.get("/api/v2/permissions")
    assert response.status_code == 200
    assert response.json() == {
        "data": {
            "credential_type": "api_key",
            "key_abilities": ["*"],
            "store_access": "all",
            "store_permissions": ALL_AREA_PERMISSIONS,
            "effective_abilities": sorted(["account:read", "stores:create", *ALL_AREA_PERMISSIONS]),
        }
    }


def test_staff_role_holds_read_permissions_only(user, client_for):
    # given
    staff_store = MembershipFactory(user=user, role=ROLE_STAFF).store
    secret = make_api_key(user)
    # when
    response = client_for(secret, HTTP_X_STORE=staff_store.slug).get("/api/v2/permissions")
    # then
    data = response.json()["data"]
    assert data["store_permissions"] == READ_PERMISSIONS
    assert data["effective_abilities"] == sorted(
        ["account:read", "stores:create", *READ_PERMISSIONS]
    )


def test_effective_abilities_are_key_abilities_within_role_permissions(user, store, client_for):
    secret = make_api_key(user, abilities=["coupon:read", "invoice", "account:read"])
    data = client_for(secret).get("/api/v2/permissions").json()["data"]
    assert data["key_abilities"] == ["account:read", "coupon:read", "invoice"]
    assert data["store_permissions"] == ALL_AREA_PERMISSIONS
    assert data["effective_abilities"] == [
        "account:read",
        "coupon:read",
        "invoice:read",
        "invoice:write",
    ]


def test_selected_store_key_reports_selected_access(user, store, client_for):
    secret = make_api_key(user, store_access="selected", stores=[store])
    data = client_for(secret).get("/api/v2/permissions").json()["data"]
    assert data["store_access"] == "selected"


def test_permissions_of_an_inaccessible_store_are_403(auth_client, other_store):
    response = auth_client.get("/api/v2/permissions", HTTP_X_STORE=other_store.slug)
    assert response.status_code == 403
    assert response.json()["param"] == "X-STORE"
