"""Key issuance outside the API: manage.py create_api_key, seed_demo, and the Django admin."""

import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from accounts.models import ApiKey
from accounts.selectors import api_key_hash
from stores.models import Membership
from tests.admin_users import cookies_carry, sessions_carry
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_create_api_key_prints_a_working_secret_once(user, store, client_for):
    secret = run("create_api_key", "--user", user.username, "--abilities", "account:read")
    secret = secret.strip()
    key = ApiKey.objects.get(user=user)
    assert key.key_hash == api_key_hash(secret)
    assert key.abilities == ["account:read"]
    assert client_for(secret).get("/api/v2/me").status_code == 200


def test_create_api_key_restricted_to_stores(user, store):
    other = MembershipFactory(user=user).store
    run(
        "create_api_key",
        "--user",
        user.username,
        "--stores",
        other.slug,
        "--current-store",
        other.slug,
    )
    key = ApiKey.objects.get(user=user)
    assert key.store_access == "selected"
    assert list(key.stores.all()) == [other]
    assert key.current_store == other


@pytest.mark.parametrize(
    "args",
    [
        ["--user", "nobody"],
        ["--abilities", "launch-missiles"],
        ["--stores", "no-such-store"],
        ["--current-store", "no-such-store"],
    ],
)
def test_create_api_key_refuses_bad_input(args, user):
    full = ["--user", user.username, *args] if args[0] != "--user" else args
    with pytest.raises(CommandError):
        run("create_api_key", *full)


def test_seed_demo_is_repeatable_and_prints_a_working_curl_line(client_for):
    first = run("seed_demo")
    second = run("seed_demo")
    secret = second.split("API key: ")[1].split()[0]
    assert "curl -s -H 'Authorization: Bearer " in second
    assert client_for(secret).get("/api/v2/me").status_code == 200
    old_secret = first.split("API key: ")[1].split()[0]
    assert client_for(old_secret).get("/api/v2/me").status_code == 401
    assert Membership.objects.filter(store__slug="demo-store", role="owner").count() == 1
    assert "previous demo key" not in first
    assert f"previous demo key {old_secret[:9]}" in second and "is revoked" in second


def test_the_demo_user_creates_a_store_right_after_the_seeding(client_for):
    # given: a fresh seeding (its store is the seeding's, not a creation by the demo user)
    secret = run("seed_demo").split("API key: ")[1].split()[0]
    # when
    response = client_for(secret).post(
        "/api/v2/stores",
        {"name": "My shop", "slug": "my-shop"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="first-store",
    )
    # then: not held by the one-store-per-interval limit
    assert response.status_code == 201, response.json()


def test_admin_creates_a_key_and_shows_the_secret_once(admin_client):
    # given
    owner = UserFactory()
    # when
    response = admin_client.post(
        "/admin/accounts/apikey/add/",
        {
            "user": owner.pk,
            "name": "ci",
            "abilities": ["account:read", "coupon"],
            "store_access": "all",
        },
    )
    # then: the secret is in this one uncached page, and nowhere else
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    page = response.content.decode()
    secret = re.search(r"<code>(sf_[A-Za-z0-9_-]{40})</code>", page).group(1)
    key = ApiKey.objects.get(user=owner)
    assert key.key_hash == api_key_hash(secret)
    assert key.abilities == ["account:read", "coupon"]
    assert not cookies_carry(response, admin_client, secret)
    assert not sessions_carry(secret)
    assert f'href="/admin/accounts/apikey/{key.pk}/change/"' in page
    assert (
        secret not in admin_client.get(f"/admin/accounts/apikey/{key.pk}/change/").content.decode()
    )


def test_admin_revoke_action(admin_client):
    owner = UserFactory()
    from tests.factories import make_api_key

    make_api_key(owner)
    key = ApiKey.objects.get(user=owner)
    admin_client.post(
        "/admin/accounts/apikey/",
        {"action": "revoke_keys", "_selected_action": [key.pk]},
    )
    key.refresh_from_db()
    assert key.revoked_at is not None


@pytest.mark.parametrize(
    "page",
    [
        "/admin/stores/store/",
        "/admin/stores/membership/",
        "/admin/accounts/user/",
        "/admin/accounts/apikey/",
    ],
)
def test_admin_pages_render(admin_client, page, store):
    assert admin_client.get(page).status_code == 200
