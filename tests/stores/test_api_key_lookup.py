"""The API key lookup (a prepared statement of plain SQL, stores.credentials) reads what the ORM
reads, for every kind of key: the key's grants, its selected stores, its user and, on a request
without X-STORE, the membership it acts through (spec "Authentication" rule 2)."""

from datetime import timedelta

import pytest
from django.test import RequestFactory
from django.utils import timezone

from accounts.models import ApiKey, User
from accounts.selectors import api_key_hash
from stores.credentials import credential_for_api_key
from stores.models import Membership
from tests.factories import MembershipFactory, StoreFactory, UserFactory, make_api_key

pytestmark = pytest.mark.django_db


def read_by_the_orm(secret: str) -> dict | None:
    key = ApiKey.objects.filter(
        key_hash=api_key_hash(secret), revoked_at__isnull=True, user__is_active=True
    ).first()
    if key is None:
        return None
    selected = key.stores.all() if key.store_access == ApiKey.STORE_ACCESS_SELECTED else []
    return {
        "user": user_fields(User.objects.get(pk=key.user_id)),
        "abilities": tuple(key.abilities),
        "store_access": key.store_access,
        "selected_store_ids": frozenset(store.pk for store in selected),
        "current_store_id": key.current_store_id,
        "current_store_deleted": key.current_store_deleted_at is not None,
        "api_key_id": key.pk,
        "default_membership": membership_fields(default_membership(key, selected)),
    }


def default_membership(key: ApiKey, selected) -> Membership | None:
    memberships = Membership.objects.select_related("store").filter(user_id=key.user_id)
    if key.current_store_id is not None:
        memberships = memberships.filter(store_id=key.current_store_id)
    if key.store_access != ApiKey.STORE_ACCESS_ALL:
        memberships = memberships.filter(store__in=selected)
    return memberships.order_by("store_id").first()


def read_by_the_lookup(secret: str, **headers) -> dict | None:
    resolved = credential_for_api_key(secret, RequestFactory().get("/", headers=headers))
    if resolved is None:
        return None
    user, credential = resolved
    assert user.get_deferred_fields() == {"password"}  # never read on the bearer path
    assert credential.user_id == user.pk
    return {
        "user": user_fields(user),
        **{
            name: getattr(credential, name)
            for name in (
                "abilities",
                "store_access",
                "selected_store_ids",
                "current_store_id",
                "current_store_deleted",
                "api_key_id",
            )
        },
        "default_membership": membership_fields(credential.default_membership),
    }


def membership_fields(membership: Membership | None) -> dict | None:
    if membership is None:
        return None
    return {
        **{f.attname: getattr(membership, f.attname) for f in Membership._meta.concrete_fields},
        "store": {
            f.attname: getattr(membership.store, f.attname)
            for f in membership.store._meta.concrete_fields
        },
    }


def user_fields(user) -> dict:
    fields = [f.attname for f in User._meta.concrete_fields if f.attname != "password"]
    return {name: getattr(user, name) for name in fields}


def key_shapes():
    user = UserFactory()
    _, second, third, fourth = (MembershipFactory(user=user).store for _ in range(4))
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
    third.delete()
    yield "current store deleted", deleted_current
    left_current = make_api_key(user, current_store=fourth)
    fourth.memberships.filter(user=user).delete()
    yield "current store no longer a membership", left_current
    yield "no membership", make_api_key(UserFactory())
    revoked = make_api_key(user)
    ApiKey.objects.filter(key_hash=api_key_hash(revoked)).update(revoked_at=timezone.now())
    yield "revoked", revoked
    yield "inactive user", make_api_key(UserFactory(is_active=False))
    yield "unknown", "sf_not_a_key"


def test_the_lookup_reads_what_the_orm_reads_for_every_kind_of_key():
    shapes = list(key_shapes())
    for name, secret in shapes:
        assert read_by_the_lookup(secret) == read_by_the_orm(secret), name
    # the comparison is not vacuous: most kinds are live keys, with and without a membership
    read = [read_by_the_orm(secret) for name, secret in shapes]
    assert len([key for key in read if key]) == 9
    assert len([key for key in read if key and key["default_membership"]]) == 6


def test_a_request_naming_its_store_reads_no_default_membership():
    for name, secret in key_shapes():
        read = read_by_the_lookup(secret, **{"X-STORE": "any-store"})
        expected = read_by_the_orm(secret)
        if expected is not None:
            expected["default_membership"] = None  # stores.access reads the named store's
        assert read == expected, name
