"""The one-query API key lookup (plain SQL, PostgreSQL) and its ORM twin (SQLite under `make
run`) read the same key, user, selected stores and default membership for every kind of key."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import ApiKey
from accounts.selectors import _live_api_key, _live_api_key_by_orm, api_key_hash
from tests.factories import MembershipFactory, StoreFactory, UserFactory, make_api_key

pytestmark = pytest.mark.django_db


def as_compared(key):
    if key is None:
        return None
    membership = key.default_membership
    return {
        "id": key.id,
        "abilities": key.abilities,
        "store_access": key.store_access,
        "current_store_id": key.current_store_id,
        "current_store_deleted_at": key.current_store_deleted_at,
        "expires_at": key.expires_at,
        "last_used_at": key.last_used_at,
        "selected_store_ids": sorted(key.selected_store_ids),
        "user": {
            f.attname: getattr(key.user, f.attname)
            for f in key.user._meta.concrete_fields
            if f.attname != "password"
        },
        "membership": None
        if membership is None
        else {
            **{f.attname: getattr(membership, f.attname) for f in membership._meta.concrete_fields},
            "store": {
                f.attname: getattr(membership.store, f.attname)
                for f in membership.store._meta.concrete_fields
            },
        },
    }


def key_shapes():
    user = UserFactory()
    first, second, third = (MembershipFactory(user=user).store for _ in range(3))
    StoreFactory()  # a store the user is not a member of
    yield "all", make_api_key(user)
    yield "selected", make_api_key(user, store_access="selected", stores=[second, third])
    yield "selected, none", make_api_key(user, store_access="selected", stores=[])
    yield "current store", make_api_key(user, current_store=second)
    yield "abilities", make_api_key(user, abilities=["coupon:read", "account:read"])
    expiring = make_api_key(user)
    ApiKey.objects.filter(key_hash=api_key_hash(expiring)).update(
        expires_at=timezone.now() + timedelta(days=1), last_used_at=timezone.now()
    )
    yield "expiring, used", expiring
    deleted_current = make_api_key(user, current_store=third)
    third.memberships.filter(user=user).delete()
    yield "current store no longer a membership", deleted_current
    revoked = make_api_key(user)
    ApiKey.objects.filter(key_hash=api_key_hash(revoked)).update(revoked_at=timezone.now())
    yield "revoked", revoked
    loner = UserFactory()
    yield "no membership", make_api_key(loner)
    inactive = UserFactory(is_active=False)
    yield "inactive user", make_api_key(inactive)
    yield "unknown", "sk_test_not_a_key"
    assert first  # the lowest store: the default membership of the "all" key


def test_the_plain_sql_lookup_and_its_orm_twin_agree_on_every_kind_of_key():
    shapes = list(key_shapes())
    for name, secret in shapes:
        key_hash = api_key_hash(secret)
        assert as_compared(_live_api_key(key_hash)) == as_compared(
            _live_api_key_by_orm(key_hash)
        ), name
    # the comparison is not vacuous: most kinds are live keys, with and without a membership
    found = [name for name, secret in shapes if _live_api_key(api_key_hash(secret))]
    assert len(found) == 8
    assert _live_api_key(api_key_hash(shapes[0][1])).default_membership is not None
