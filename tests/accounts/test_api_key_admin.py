"""The API key admin: staff other than superusers create keys for their own account only,
revoking needs the change permission, the expiry is set at creation and shown and filtered in
the list, and a key whose current store was deleted is re-pinned here."""

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import ApiKey, User
from tests.admin_users import post_action, staff_client_with
from tests.factories import MembershipFactory, UserFactory, make_api_key

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/accounts/apikey/"
ADD = "/admin/accounts/apikey/add/"


def add_form(owner, **fields):
    return {
        "user": owner.pk,
        "name": "ci",
        "abilities": ["account:read"],
        "store_access": "all",
        **fields,
    }


def staff_with(*permissions: str) -> tuple[User, Client]:
    client = staff_client_with(*permissions)
    return User.objects.get(pk=client.session["_auth_user_id"]), client


@pytest.mark.parametrize("owner_kind", ["superuser", "staff", "customer"])
def test_staff_cannot_create_a_key_for_another_user(owner_kind):
    # given: staff who may add keys, and another account
    owner = UserFactory(is_staff=owner_kind != "customer", is_superuser=owner_kind == "superuser")
    _, creator = staff_with("accounts.view_apikey", "accounts.add_apikey")
    # when: the add form is posted for that account
    response = creator.post(ADD, add_form(owner))
    # then: a form error; no key, and no secret shown
    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    assert "sf_" not in response.content.decode()
    assert not ApiKey.objects.exists()


def test_staff_create_a_key_for_their_own_account_and_see_its_secret(client_for):
    me, creator = staff_with("accounts.view_apikey", "accounts.add_apikey")

    response = creator.post(ADD, add_form(me))

    assert response.status_code == 200
    key = ApiKey.objects.get()
    assert key.user_id == me.pk
    secret = re.search(r"<code>(sf_[A-Za-z0-9_-]+)</code>", response.content.decode()).group(1)
    assert client_for(secret).get("/api/v2/me").json()["data"]["username"] == me.username


def test_the_add_form_offers_staff_their_own_account_only():
    me, creator = staff_with("accounts.view_apikey", "accounts.add_apikey")
    other = UserFactory()

    html = creator.get(ADD).content.decode()

    assert f'<option value="{me.pk}" selected>' in html
    assert f'value="{other.pk}"' not in html


def test_a_superuser_creates_a_key_for_any_user(admin_client):
    owner = UserFactory(is_superuser=True, is_staff=True)

    response = admin_client.post(ADD, add_form(owner))

    assert response.status_code == 200
    assert ApiKey.objects.get().user_id == owner.pk


def test_view_only_staff_cannot_revoke_a_key(user):
    # given
    make_api_key(user)
    key = ApiKey.objects.get(user=user)
    viewer = staff_client_with("accounts.view_apikey")
    assert viewer.get(CHANGELIST).status_code == 200
    # when
    post_action(viewer, CHANGELIST, "revoke_keys", [key.pk])
    # then
    key.refresh_from_db()
    assert key.revoked_at is None
    assert "revoke_keys" not in viewer.get(CHANGELIST).content.decode()


def test_staff_with_the_change_permission_revokes_a_key(user, client_for):
    secret = make_api_key(user)
    key = ApiKey.objects.get(user=user)
    editor = staff_client_with("accounts.view_apikey", "accounts.change_apikey")

    post_action(editor, CHANGELIST, "revoke_keys", [key.pk])

    key.refresh_from_db()
    assert key.revoked_at is not None
    assert client_for(secret).get("/api/v2/me").status_code == 401


def test_admin_sets_an_expiry_at_creation():
    owner, creator = staff_with("accounts.view_apikey", "accounts.add_apikey")

    response = creator.post(
        ADD, add_form(owner, expires_at_0="2099-03-04", expires_at_1="05:06:07")
    )

    assert response.status_code == 200
    key = ApiKey.objects.get(user=owner)
    assert key.expires_at.isoformat() == "2099-03-04T05:06:07+00:00"


def test_admin_refuses_an_expiry_in_the_past():
    owner, creator = staff_with("accounts.view_apikey", "accounts.add_apikey")
    yesterday = timezone.now() - timedelta(days=1)

    response = creator.post(
        ADD,
        add_form(
            owner,
            expires_at_0=yesterday.strftime("%Y-%m-%d"),
            expires_at_1=yesterday.strftime("%H:%M:%S"),
        ),
    )

    assert response.status_code == 200
    assert "must be in the future" in response.content.decode()
    assert not ApiKey.objects.exists()


def test_the_expiry_is_read_only_after_creation(user):
    make_api_key(user)
    key = ApiKey.objects.get(user=user)
    page = staff_client_with("accounts.view_apikey", "accounts.change_apikey").get(
        f"{CHANGELIST}{key.pk}/change/"
    )
    assert page.status_code == 200
    html = page.content.decode()
    assert 'name="name"' in html
    assert 'name="expires_at_0"' not in html


def test_list_shows_the_expiry_beside_last_used(user):
    make_api_key(user)
    html = staff_client_with("accounts.view_apikey").get(CHANGELIST).content.decode()
    assert html.index("column-last_used_at") < html.index("column-expires_at")


def names_listed(client, query: str) -> set[str]:
    html = client.get(f"{CHANGELIST}?{query}").content.decode()
    return {name for name in ("expired", "later", "forever", "idle") if f">{name}<" in html}


def test_list_filters_expired_and_unused_keys(user):
    # given
    now = timezone.now()
    for name, expires_at, last_used_at in [
        ("expired", now - timedelta(days=1), now - timedelta(days=2)),
        ("later", now + timedelta(days=1), now),
        ("forever", None, None),
        ("idle", None, now - timedelta(days=91)),
    ]:
        make_api_key(user)
        ApiKey.objects.filter(name="test").update(
            name=name, expires_at=expires_at, last_used_at=last_used_at
        )
    viewer = staff_client_with("accounts.view_apikey")
    # then
    assert names_listed(viewer, "expiry=expired") == {"expired"}
    assert names_listed(viewer, "expiry=expires") == {"later"}
    assert names_listed(viewer, "expiry=never") == {"forever", "idle"}
    assert names_listed(viewer, "usage=never") == {"forever"}
    assert names_listed(viewer, "usage=idle") == {"forever", "idle"}


def test_a_new_current_store_chosen_in_the_admin_re_pins_the_key(user, store, client_for):
    # given: the key's current store was deleted, so the key is refused without X-STORE
    doomed = MembershipFactory(user=user).store
    secret = make_api_key(user, current_store=doomed)
    doomed.delete()
    assert client_for(secret).get("/api/v2/permissions").status_code == 403
    key = ApiKey.objects.get(user=user)
    editor = staff_client_with("accounts.view_apikey", "accounts.change_apikey")
    # when
    response = editor.post(
        f"{CHANGELIST}{key.pk}/change/",
        {
            "user": user.pk,
            "name": key.name,
            "abilities": ["*"],
            "store_access": "all",
            "current_store": store.pk,
        },
    )
    # then
    assert response.status_code == 302
    key.refresh_from_db()
    assert (key.current_store_id, key.current_store_deleted_at) == (store.pk, None)
    assert client_for(secret).get("/api/v2/permissions").status_code == 200


def test_saving_a_key_without_choosing_a_store_keeps_it_refused(user, store, client_for):
    doomed = MembershipFactory(user=user).store
    secret = make_api_key(user, current_store=doomed)
    doomed.delete()
    key = ApiKey.objects.get(user=user)
    editor = staff_client_with("accounts.view_apikey", "accounts.change_apikey")

    editor.post(
        f"{CHANGELIST}{key.pk}/change/",
        {"user": user.pk, "name": "renamed", "abilities": ["*"], "store_access": "all"},
    )

    key.refresh_from_db()
    assert key.name == "renamed" and key.current_store_deleted_at is not None
    assert client_for(secret).get("/api/v2/permissions").status_code == 403


def test_an_issued_keys_owner_and_grants_cannot_be_changed(user, store, client_for):
    # given: a live key of `user`, restricted to `store`, and staff who may revoke (change)
    other_store = MembershipFactory(user=user).store
    secret = make_api_key(
        user,
        abilities=["account:read"],
        store_access="selected",
        stores=[store],
        current_store=store,
    )
    key = ApiKey.objects.get(user=user)
    intruder = UserFactory()
    MembershipFactory(user=intruder, store=other_store)
    editor = staff_client_with("accounts.view_apikey", "accounts.change_apikey")
    # when: the change form is posted with another owner and wider grants
    response = editor.post(
        f"{CHANGELIST}{key.pk}/change/",
        {
            "user": intruder.pk,
            "name": "renamed",
            "abilities": ["*"],
            "store_access": "all",
            "stores": [store.pk, other_store.pk],
            "current_store": other_store.pk,
        },
    )
    # then: only the name changed; the key still acts as `user` on `store` with its abilities
    assert response.status_code == 302
    key.refresh_from_db()
    assert key.name == "renamed"
    assert (key.user_id, key.abilities, key.store_access, key.current_store_id) == (
        user.pk,
        ["account:read"],
        "selected",
        store.pk,
    )
    assert list(key.stores.values_list("pk", flat=True)) == [store.pk]
    me = client_for(secret).get("/api/v2/me")
    assert me.status_code == 200
    assert me.json()["data"]["username"] == user.username


def test_the_change_form_offers_no_input_for_the_owner_or_the_grants(user, store):
    make_api_key(user, current_store=store)
    key = ApiKey.objects.get(user=user)
    editor = staff_client_with("accounts.view_apikey", "accounts.change_apikey")

    html = editor.get(f"{CHANGELIST}{key.pk}/change/").content.decode()

    assert 'name="name"' in html
    for field in ("user", "abilities", "store_access", "stores", "current_store"):
        assert f'name="{field}"' not in html, field


def test_creating_a_key_still_chooses_its_owner_and_grants(admin_client, user, store):
    owner = UserFactory()
    MembershipFactory(user=owner, store=store)

    response = admin_client.post(
        ADD,
        add_form(
            owner,
            abilities=["account:read", "coupon:read"],
            store_access="selected",
            stores=[store.pk],
            current_store=store.pk,
        ),
    )

    assert response.status_code == 200
    key = ApiKey.objects.get(user=owner)
    assert (key.abilities, key.store_access, key.current_store_id) == (
        ["account:read", "coupon:read"],
        "selected",
        store.pk,
    )
    assert list(key.stores.values_list("pk", flat=True)) == [store.pk]
