"""API key expiry (401 saying so) and a deleted current store (403 until re-pinned): the
issue "Production hardening", point 6."""

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.authentication import ApiKeyAuthentication
from accounts.models import ApiKey
from accounts.selectors import api_key_hash
from accounts.services import api_key_create
from core.api.errors import ValidationFailed
from stores.models import Store
from tests.factories import MembershipFactory, UserFactory, make_api_key

pytestmark = pytest.mark.django_db


def expire(secret_owner, *, ago=timedelta(seconds=1)):
    ApiKey.objects.filter(user=secret_owner).update(expires_at=timezone.now() - ago)


def test_a_key_before_its_expiry_works(user, store, client_for):
    secret = make_api_key(user)
    ApiKey.objects.filter(user=user).update(expires_at=timezone.now() + timedelta(minutes=5))
    assert client_for(secret).get("/api/v2/me").status_code == 200


def test_an_expired_key_is_401_with_a_message_that_says_so(user, store, client_for):
    # given
    secret = make_api_key(user)
    ApiKey.objects.filter(user=user).update(expires_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    # when
    response = client_for(secret).get("/api/v2/me")
    # then
    assert response.status_code == 401
    body = response.json()
    assert (body["type"], body["code"]) == ("authentication_error", "unauthenticated")
    assert body["message"] == "This API key expired at 2026-01-02T03:04:05Z; issue a new key."
    assert response["WWW-Authenticate"] == "Bearer"


def test_an_expired_key_is_refused_on_v1_and_store_endpoints_too(user, store, client_for):
    secret = make_api_key(user)
    expire(user)
    for path in ("/api/v1/coupons", "/api/v2/permissions", "/api/v2/stores"):
        response = client_for(secret).get(path)
        assert response.status_code == 401, path
        assert "expired" in response.json()["message"]


def test_an_expired_key_does_not_update_last_used_at(user, store, client_for):
    secret = make_api_key(user)
    expire(user)
    client_for(secret).get("/api/v2/me")
    assert ApiKey.objects.get(user=user).last_used_at is None


def test_an_unknown_key_keeps_the_generic_message(client_for):
    response = client_for("sf_" + "y" * 40).get("/api/v2/me")
    assert response.status_code == 401
    assert "expired at" not in response.json()["message"]


def test_the_credential_lookup_stays_one_query(user, store):
    # given: a key with an expiry and a deleted current store, used a moment ago
    second = MembershipFactory(user=user).store
    secret = make_api_key(user, current_store=second)
    second.delete()
    ApiKey.objects.filter(user=user).update(
        expires_at=timezone.now() + timedelta(days=1), last_used_at=timezone.now()
    )
    # when
    with CaptureQueriesContext(connection) as queries:
        identity = ApiKeyAuthentication().identity_read(api_key_hash(secret))
    # then
    assert len(queries) == 1
    assert identity.credential.current_store_deleted is True


@pytest.mark.parametrize(
    "expires_at",
    [timezone.now() - timedelta(minutes=1), datetime(2099, 1, 1)],  # past; no time zone
    ids=["past", "naive"],
)
def test_create_refuses_an_expiry_not_in_the_future_or_without_zone(user, expires_at):
    with pytest.raises(ValidationFailed) as refused:
        api_key_create(user=user, name="x", abilities=["*"], expires_at=expires_at)
    assert refused.value.param == "expires_at"
    assert not ApiKey.objects.exists()


def run_create_api_key(*args) -> str:
    out = StringIO()
    call_command("create_api_key", *args, stdout=out)
    return out.getvalue().strip()


def test_create_api_key_command_sets_an_expiry(user):
    run_create_api_key("--user", user.username, "--expires-at", "2099-05-06T07:08:09+02:00")
    assert ApiKey.objects.get(user=user).expires_at == datetime(2099, 5, 6, 5, 8, 9, tzinfo=UTC)


def test_create_api_key_command_reads_an_expiry_without_offset_as_utc(user):
    run_create_api_key("--user", user.username, "--expires-at", "2099-05-06T07:08:09")
    assert ApiKey.objects.get(user=user).expires_at == datetime(2099, 5, 6, 7, 8, 9, tzinfo=UTC)


def test_create_api_key_command_sets_an_expiry_in_days(user):
    before = timezone.now()
    run_create_api_key("--user", user.username, "--expires-in-days", "30")
    expires_at = ApiKey.objects.get(user=user).expires_at
    assert before + timedelta(days=30) <= expires_at <= timezone.now() + timedelta(days=30)


def test_create_api_key_command_without_expiry_makes_a_key_that_never_expires(user):
    run_create_api_key("--user", user.username)
    assert ApiKey.objects.get(user=user).expires_at is None


@pytest.mark.parametrize(
    "args",
    [
        ["--expires-at", "next tuesday"],
        ["--expires-at", "2020-01-01T00:00:00Z"],
        ["--expires-at", "2099-13-45T00:00:00Z"],
        ["--expires-in-days", "0"],
    ],
)
def test_create_api_key_command_refuses_a_bad_expiry(user, args):
    with pytest.raises(CommandError):
        run_create_api_key("--user", user.username, *args)
    assert not ApiKey.objects.exists()


def test_create_api_key_command_refuses_both_expiry_options(user):
    with pytest.raises(CommandError):
        run_create_api_key(
            "--user",
            user.username,
            "--expires-at",
            "2099-01-01T00:00:00Z",
            "--expires-in-days",
            "3",
        )


@pytest.mark.parametrize("how", ["instance", "queryset", "admin"])
def test_deleting_the_current_store_marks_every_key_pinned_to_it(user, store, how):
    # given: two keys pinned to `doomed`, one pinned to `store`, one unpinned
    doomed = MembershipFactory(user=user).store
    make_api_key(user, current_store=doomed)
    make_api_key(user, current_store=doomed)
    make_api_key(user, current_store=store)
    make_api_key(user)
    # when
    if how == "instance":
        doomed.delete()
    elif how == "queryset":
        Store.objects.filter(pk=doomed.pk).delete()
    else:
        # a superuser: deleting a store also deletes its memberships (their permission too)
        deleter = Client()
        deleter.force_login(UserFactory(is_staff=True, is_superuser=True))
        delete_page = f"/admin/stores/store/{doomed.pk}/delete/"
        assert deleter.get(delete_page).status_code == 200
        assert deleter.post(delete_page, {"post": "yes"}).status_code == 302
        assert not Store.objects.filter(pk=doomed.pk).exists()
    # then
    keys = ApiKey.objects.order_by("pk")
    marked = [(k.current_store_id, k.current_store_deleted_at is not None) for k in keys]
    assert marked == [(None, True), (None, True), (store.pk, False), (None, False)]


def test_a_key_whose_current_store_was_deleted_is_refused_only_where_a_store_is_needed(
    user, store, client_for
):
    doomed = MembershipFactory(user=user).store
    secret = make_api_key(user, current_store=doomed)
    doomed.delete()

    coupons = client_for(secret).get("/api/v1/coupons")
    me = client_for(secret).get("/api/v2/me")

    assert coupons.status_code == 403
    assert (coupons.json()["code"], coupons.json()["param"]) == ("forbidden", "X-STORE")
    assert "was deleted" in coupons.json()["message"]
    assert me.status_code == 200
