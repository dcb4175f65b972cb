"""POST /api/v2/stores: idempotency, slug rules, the one-store-per-60-s limit."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

import stores.views
from core.api.idempotency import idempotency_keys_prune
from core.api.models import IdempotencyKey
from stores.models import Membership, Store
from stores.services import store_create
from tests.concurrency import run_at_once
from tests.factories import UserFactory, make_api_key

pytestmark = pytest.mark.django_db

URL = "/api/v2/stores"


def create(client, body=None, key="key-1", **extra):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return client.post(
        URL, body or {"name": "My Shop", "slug": "my-shop"}, format="json", **headers, **extra
    )


def age_stores_of(user, seconds=61):
    """Moves the user's stores back in time, past the creation interval."""
    for store in Store.objects.filter(created_by=user):
        store.created_at -= timedelta(seconds=seconds)
        store.save(update_fields=["created_at"])


def test_creates_the_store_with_the_creator_as_owner(user, auth_client, settings):
    response = create(auth_client)
    assert response.status_code == 201
    store = Store.objects.get(slug="my-shop")
    assert response.json() == {
        "data": {
            "id": str(store.id),
            "slug": "my-shop",
            "name": "My Shop",
            "visibility": "PUBLIC",
            "storefront_url": f"https://my-shop.{settings.STOREFRONT_DOMAIN}",
            "dashboard_url": f"{settings.BASE_URL}/admin/stores/store/{store.id}/change/",
        }
    }
    assert Membership.objects.get(store=store).user == user
    assert Membership.objects.get(store=store).role == "owner"
    assert "Idempotent-Replayed" not in response


def test_replay_returns_the_same_store_and_the_replayed_header(auth_client):
    first = create(auth_client)
    again = create(auth_client)
    assert again.status_code == 201
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert Store.objects.filter(slug="my-shop").count() == 1


def test_same_key_with_a_different_body_is_409(auth_client):
    create(auth_client)
    response = create(auth_client, {"name": "Other", "slug": "other-shop"})
    assert response.status_code == 409
    assert response.json()["code"] == "conflict"
    assert response.json()["param"] == "Idempotency-Key"
    assert not Store.objects.filter(slug="other-shop").exists()


def test_missing_idempotency_key_is_422(auth_client):
    response = create(auth_client, key=None)
    assert response.status_code == 422
    body = response.json()
    assert body["param"] == "Idempotency-Key"
    assert "Idempotency-Key" in body["errors"]
    assert not Store.objects.filter(slug="my-shop").exists()


def test_idempotency_key_length_bounds(auth_client):
    assert create(auth_client, key="k" * 256).status_code == 422
    assert create(auth_client, key="k" * 255).status_code == 201


def test_keys_are_scoped_per_user(auth_client, client_for):
    other = UserFactory()
    create(auth_client)
    response = create(client_for(make_api_key(other)), {"name": "B", "slug": "b-shop"})
    assert response.status_code == 201
    assert "Idempotent-Replayed" not in response


def test_stored_error_outcomes_replay_with_the_current_request_id(auth_client):
    first = create(auth_client, {"name": "X", "slug": "admin"})
    again = create(auth_client, {"name": "X", "slug": "admin"})
    assert first.status_code == again.status_code == 422
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["request_id"] == again["X-Request-Id"] != first.json()["request_id"]


def test_key_without_stores_create_ability_is_403(user, client_for):
    client = client_for(make_api_key(user, abilities=["account:read"]))
    assert create(client).status_code == 403


@pytest.mark.parametrize(
    ("slug", "ok"),
    [
        ("ab", False),
        ("abc", True),
        ("a" * 64, False),
        ("a" * 63, True),
        ("-shop", False),
        ("shop-", False),
        ("sh-op", True),
        ("my_shop", False),
        ("my shop", False),
        ("shöp", False),
        ("\u212ashop", False),  # the Kelvin sign lower-cases to an ASCII k
        (" shop", False),
        ("admin", False),
        ("api", False),
        ("www", False),
        ("admins", True),
        ("shop\n", False),  # `$` alone would let a trailing newline through
        ("\nshop", False),
    ],
)
def test_slug_rules(slug, ok, auth_client):
    response = create(auth_client, {"name": "Shop", "slug": slug})
    assert response.status_code == (201 if ok else 422), response.json()
    if not ok:
        assert response.json()["param"] == "slug"
        assert response.json()["errors"]["slug"]


def test_slug_is_lower_cased(auth_client):
    response = create(auth_client, {"name": "Shop", "slug": "MyShop"})
    assert response.status_code == 201
    assert response.json()["data"]["slug"] == "myshop"


def test_taken_slug_is_422_whatever_its_case(auth_client, other_store):
    response = create(auth_client, {"name": "Shop", "slug": other_store.slug.upper()})
    assert response.status_code == 422
    assert response.json()["errors"]["slug"] == ["is already taken"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"slug": "shoppe"}, "name"),
        ({"name": "", "slug": "shoppe"}, "name"),
        ({"name": "x" * 256, "slug": "shoppe"}, "name"),
        ({"name": "Shop"}, "slug"),
        ({"name": "Shop", "slug": 12}, "slug"),
        ({"name": ["Shop"], "slug": "shoppe"}, "name"),
        ({"name": " \t\n", "slug": "shoppe"}, "name"),
        ({"name": "Sh\x00op", "slug": "shoppe"}, "name"),
        ({"name": "\u3000", "slug": "shoppe"}, "name"),  # an ideographic space is blank too
    ],
)
def test_invalid_bodies_are_422_naming_the_field(body, field, auth_client):
    response = create(auth_client, body)
    assert response.status_code == 422
    assert field in response.json()["errors"]


def test_second_store_within_60_seconds_is_429_across_keys(user, auth_client, client_for):
    # given
    assert create(auth_client).status_code == 201
    other_key_client = client_for(make_api_key(user))
    # when
    response = create(other_key_client, {"name": "Two", "slug": "two-shop"}, key="key-2")
    # then
    assert response.status_code == 429
    assert response.json()["code"] == "rate_limit_exceeded"
    assert 1 <= int(response["Retry-After"]) <= 60
    assert not Store.objects.filter(slug="two-shop").exists()


def test_the_creation_limit_429_carries_no_request_budget_headers(
    auth_client, frozen_rate_limit_clock
):
    # given: the request budget is far from spent
    first = create(auth_client)
    assert int(first["X-RateLimit-Remaining"]) > 100
    # when
    response = create(auth_client, {"name": "Two", "slug": "two-shop"}, key="key-2")
    # then: only the limit that refused it speaks (docs/decisions/foundation.md "Rate limits")
    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1
    for header in ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"):
        assert header not in response
    # and the next ordinary request shows the budget again, this request counted
    remaining = int(auth_client.get("/api/v2/me")["X-RateLimit-Remaining"])
    assert remaining == int(first["X-RateLimit-Remaining"]) - 2


def test_replaying_a_completed_key_is_not_a_new_creation(auth_client):
    create(auth_client)
    response = create(auth_client)
    assert response.status_code == 201
    assert response["Idempotent-Replayed"] == "true"


def test_a_refused_429_is_not_stored_and_the_key_works_later(user, auth_client):
    create(auth_client)
    body = {"name": "Two", "slug": "two-shop"}
    assert create(auth_client, body, key="key-2").status_code == 429
    # when: the interval has passed
    age_stores_of(user)
    response = create(auth_client, body, key="key-2")
    # then
    assert response.status_code == 201
    assert "Idempotent-Replayed" not in response


def test_a_5xx_outcome_is_not_stored_and_the_retry_runs(auth_client, monkeypatch):
    # given: store creation fails once with an unexpected error
    calls = []

    def store_create_failing_once(**kwargs):
        calls.append(kwargs)
        if len(calls) == 1:
            raise RuntimeError("database hiccup")
        return store_create(**kwargs)

    monkeypatch.setattr(stores.views, "store_create", store_create_failing_once)
    # the client would re-raise the error got_request_exception reports; the response counts
    auth_client.raise_request_exception = False
    # when
    first = create(auth_client)
    # then: the envelope, no trace, and nothing stored under the key
    assert first.status_code == 500
    assert first.json()["code"] == "api_error"
    assert "database hiccup" not in first.content.decode()
    assert not IdempotencyKey.objects.exists()
    # when: the client retries with the same key
    retry = create(auth_client)
    # then: executed, not replayed
    assert retry.status_code == 201
    assert "Idempotent-Replayed" not in retry
    assert retry.json()["data"]["slug"] == "my-shop"
    assert len(calls) == 2
    assert IdempotencyKey.objects.get().response_status == 201


def test_after_60_seconds_another_store_may_be_created(user, auth_client):
    create(auth_client)
    age_stores_of(user)
    assert create(auth_client, {"name": "Two", "slug": "two-shop"}, key="k2").status_code == 201


def test_expired_idempotency_key_runs_again(user, auth_client):
    create(auth_client)
    IdempotencyKey.objects.update(
        created_at=IdempotencyKey.objects.get().created_at - timedelta(hours=25)
    )
    age_stores_of(user)
    response = create(auth_client)
    # a new execution: the slug is now taken by the first creation
    assert response.status_code == 422
    assert "Idempotent-Replayed" not in response


def test_prune_deletes_only_expired_keys(user):
    # given
    now = timezone.now()
    for key, age in (("old", timedelta(hours=25)), ("fresh", timedelta(hours=23))):
        IdempotencyKey.objects.create(
            user=user, operation="stores.create", key=key, fingerprint="f", created_at=now - age
        )
    # when
    deleted = idempotency_keys_prune()
    # then
    assert deleted == 1
    assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["fresh"]


def test_a_claim_abandoned_in_flight_is_taken_over(user, auth_client):
    # given: a claim left in flight 10 minutes ago by a request that died
    IdempotencyKey.objects.create(
        user=user,
        operation="stores.create",
        key="key-1",
        fingerprint="f",
        created_at=timezone.now() - timedelta(minutes=10),
    )
    # when / then
    assert create(auth_client).status_code == 201


def test_claim_in_flight_is_409(user, auth_client):
    IdempotencyKey.objects.create(
        user=user,
        operation="stores.create",
        key="key-1",
        fingerprint="f",
        created_at=timezone.now(),
    )
    response = create(auth_client)
    assert response.status_code == 409
    assert response.json()["code"] == "conflict"
    assert response.json()["param"] == "Idempotency-Key"


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_requests_with_one_key_create_one_store():
    # given
    user = UserFactory()
    secret = make_api_key(user)

    def post():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return create(client, key="same-key")

    # when
    responses = run_at_once(post, 20)
    # then
    assert Store.objects.filter(created_by=user).count() == 1
    statuses = sorted(r.status_code for r in responses)
    assert len(statuses) == 20
    assert set(statuses) <= {201, 409}, statuses
    created_ids = {r.json()["data"]["id"] for r in responses if r.status_code == 201}
    assert len(created_ids) == 1
    for response in responses:
        if response.status_code == 409:
            assert response.json()["param"] == "Idempotency-Key"


@pytest.mark.parametrize("key", ["clé-1", "tab\tkey"])
def test_idempotency_key_must_be_printable_ascii(key, auth_client):
    response = create(auth_client, key=key)
    assert response.status_code == 422
    assert response.json()["param"] == "Idempotency-Key"


@pytest.mark.parametrize("slug", [12345, True, None, ["abc"]])
def test_slug_must_be_a_json_string(slug, auth_client):
    response = create(auth_client, {"name": "Shop", "slug": slug})
    assert response.status_code == 422
    assert "slug" in response.json()["errors"]


def test_both_invalid_fields_are_named_at_once(auth_client):
    response = create(auth_client, {"name": "", "slug": "-x"})
    assert response.status_code == 422
    assert set(response.json()["errors"]) == {"name", "slug"}


@pytest.mark.parametrize("name", ["x" * 255, " padded ", "Ünïcödé Shop"])
def test_names_within_the_rules_are_kept_as_sent(name, auth_client):
    response = create(auth_client, {"name": name, "slug": "shoppe"})
    assert response.status_code == 201
    assert response.json()["data"]["name"] == name


def test_schema_states_the_format_rules_of_the_body(schema):
    # Derived from the serializer's validators: as strict as the API, so that every
    # schema-valid body is accepted (the contract run) and clients can check before sending.
    body = schema["paths"]["/api/v2/stores"]["post"]["requestBody"]
    assert body["required"] is True
    name = body["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    fields = schema["components"]["schemas"][name]["properties"]
    slug, store_name = fields["slug"], fields["name"]
    assert (slug["minLength"], slug["maxLength"]) == (3, 63)
    assert slug["pattern"] == "^[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]$"
    assert re.fullmatch(slug["not"]["pattern"], "AdMiN")
    assert (store_name["minLength"], store_name["maxLength"]) == (1, 255)
    assert store_name["pattern"] == "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$"


def test_unknown_body_fields_are_ignored(auth_client):
    response = create(auth_client, {"name": "Shop", "slug": "shoppe", "visibility": "PRIVATE"})
    assert response.status_code == 201
    assert response.json()["data"]["visibility"] == "PUBLIC"
