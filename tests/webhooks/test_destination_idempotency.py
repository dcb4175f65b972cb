"""Idempotency-Key on the destination writes (PUT, DELETE, rotate-secret), and the signing
secret, which a stored response never holds."""

from importlib import import_module

import pytest
from django.test import Client
from rest_framework.test import APIClient

from core.api.models import IdempotencyKey
from tests.concurrency import run_at_once
from tests.factories import make_api_key
from tests.oauth_cli.flow import refresh
from tests.webhooks.helpers import store_secret
from webhooks.models import WebhookChannel, WebhookSigningSecret

URL = "/api/v2/webhook-destination"
ROTATE_URL = f"{URL}/rotate-secret"
BODY = {"url": "http://127.0.0.1:9000/in", "event_types": ["order.completed"]}
# A receiver whose path and query are its credential (hooks.slack.com/services/... style).
SECRET_PATH = "/services/T0001/B0002/hook-credential-123"
SECRET_QUERY = "token=query-credential-456"
CREDENTIAL_URL = f"http://127.0.0.1:9000{SECRET_PATH}?{SECRET_QUERY}"
REPLAYED = "Idempotent-Replayed"


def key(value):
    return {"HTTP_IDEMPOTENCY_KEY": value}


def stored_bodies() -> str:
    return str(list(IdempotencyKey.objects.values_list("response_body", flat=True)))


def test_put_replayed_returns_the_stored_creation_without_a_second_write(auth_client, store):
    # given a creation under a key, then a change made without one
    first = auth_client.put(URL, BODY, **key("put-1"))
    changed = auth_client.put(URL, {**BODY, "url": "http://127.0.0.1:9000/v2"})

    # when the creation is retried with its key
    again = auth_client.put(URL, BODY, **key("put-1"))

    # then it answers the stored 201, secret included, and does not write again
    assert (first.status_code, changed.status_code, again.status_code) == (201, 200, 201)
    assert again.json() == first.json()
    assert again[REPLAYED] == "true"
    assert REPLAYED not in first
    assert WebhookChannel.objects.get(store=store).url == "http://127.0.0.1:9000/v2"


def test_put_key_reused_with_another_body_is_409(auth_client, store):
    auth_client.put(URL, BODY, **key("put-2"))

    response = auth_client.put(URL, {**BODY, "enabled": False}, **key("put-2"))

    assert response.status_code == 409
    assert response.json()["param"] == "Idempotency-Key"
    assert WebhookChannel.objects.get(store=store).enabled is True


def test_put_refusal_is_replayed_too(auth_client):
    body = {**BODY, "event_types": ["order.shipped"]}
    first = auth_client.put(URL, body, **key("put-3"))

    again = auth_client.put(URL, body, **key("put-3"))

    assert first.status_code == again.status_code == 422
    assert again[REPLAYED] == "true"
    assert again.json()["errors"] == first.json()["errors"]


def test_rotate_replayed_does_not_rotate_again_and_shows_the_same_secret(auth_client, store):
    created = auth_client.put(URL, BODY).json()["data"]["secret"]

    first = auth_client.post(ROTATE_URL, **key("rotate-1"))
    again = auth_client.post(ROTATE_URL, **key("rotate-1"))

    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()
    assert again[REPLAYED] == "true"
    destination = WebhookChannel.objects.get(store=store)
    assert store_secret(destination.store) == first.json()["data"]["secret"] != created
    assert store_secret(destination.store, previous=True) == created


def test_stored_responses_never_hold_the_signing_secret(auth_client, store):
    # when a creation and a rotation run under keys
    created = auth_client.put(URL, BODY, **key("secret-1")).json()["data"]["secret"]
    rotated = auth_client.post(ROTATE_URL, **key("secret-2")).json()["data"]["secret"]

    # then neither secret is in the idempotency table, in clear
    assert IdempotencyKey.objects.count() == 2
    assert created not in stored_bodies()
    assert rotated not in stored_bodies()


def test_stored_responses_keep_neither_the_urls_path_nor_its_query(auth_client, store):
    # when a creation, a replacement and a rotation run under keys with a credential URL
    body = {**BODY, "url": CREDENTIAL_URL}
    created = auth_client.put(URL, body, **key("url-1"))
    replaced = auth_client.put(URL, {**body, "enabled": False}, **key("url-2"))
    rotated = auth_client.post(ROTATE_URL, **key("url-3"))

    # then the responses showed the URL in full, and the idempotency table holds neither part
    assert [r.json()["data"]["url"] for r in (created, replaced, rotated)] == [CREDENTIAL_URL] * 3
    assert IdempotencyKey.objects.count() == 3
    records = str(list(IdempotencyKey.objects.values()))
    assert "hook-credential-123" not in records
    assert "query-credential-456" not in records


def test_replays_show_the_full_url_again(auth_client, store):
    body = {**BODY, "url": CREDENTIAL_URL}
    # a creation, then the URL changes: its replay reads the URL from its own (identical) body
    created = auth_client.put(URL, body, **key("url-4"))
    auth_client.put(URL, BODY)
    created_again = auth_client.put(URL, body, **key("url-4"))
    # a rotation, replayed while the URL is the same, then after it changed
    auth_client.put(URL, body)
    rotated = auth_client.post(ROTATE_URL, **key("url-5"))
    rotated_again = auth_client.post(ROTATE_URL, **key("url-5"))
    auth_client.put(URL, BODY)
    rotated_later = auth_client.post(ROTATE_URL, **key("url-5"))

    assert created_again.status_code == 201
    assert created_again.json() == created.json()
    assert rotated_again.json() == rotated.json()
    # the rotation's URL is gone from the destination: its replay shows the origin, as to a reader
    assert rotated_later.status_code == 200
    assert rotated_later.json()["data"]["url"] == "http://127.0.0.1:9000"
    assert rotated_later.json()["data"]["secret"] == rotated.json()["data"]["secret"]


@pytest.mark.parametrize("method", ["put", "post"])
def test_another_credentials_replay_never_shows_the_secret(
    auth_client, user, store, client_for, method
):
    # given a creation (or a rotation) under a key by one API key
    path = URL if method == "put" else ROTATE_URL
    if method == "post":
        auth_client.put(URL, BODY)
    first = getattr(auth_client, method)(path, BODY if method == "put" else None, **key("mine"))
    secret = first.json()["data"]["secret"]

    # when another API key of the same user replays it with the same key and body
    other_key = client_for(make_api_key(user))
    again = getattr(other_key, method)(path, BODY if method == "put" else None, **key("mine"))

    # then it is a 409 without the secret; the first key's own replay still shows it
    assert again.status_code == 409
    assert again.json()["param"] == "Idempotency-Key"
    assert secret not in again.content.decode()
    own = getattr(auth_client, method)(path, BODY if method == "put" else None, **key("mine"))
    assert own.status_code == first.status_code
    assert own.json()["data"]["secret"] == secret
    assert store_secret(store) == secret


def test_another_credentials_replay_without_a_secret_is_served(
    auth_client, user, store, client_for
):
    # a replacement shows no secret: any credential of the user that made it may replay it
    auth_client.put(URL, BODY)
    first = auth_client.put(URL, {**BODY, "enabled": False}, **key("replace"))

    again = client_for(make_api_key(user)).put(URL, {**BODY, "enabled": False}, **key("replace"))

    assert (first.status_code, again.status_code) == (200, 200)
    assert again[REPLAYED] == "true"
    assert again.json() == first.json()


@pytest.mark.parametrize("change", ["rotated", "deleted", "recreated"])
def test_a_secret_replaced_since_is_not_shown_again(auth_client, store, change):
    # given a rotation under a key, then the secret it returned is replaced
    auth_client.put(URL, BODY)
    auth_client.post(ROTATE_URL, **key("rotate-2"))
    if change == "rotated":
        auth_client.post(ROTATE_URL)
    else:
        auth_client.delete(URL)
    if change == "recreated":
        auth_client.put(URL, BODY)

    # when the rotation is retried with its key
    again = auth_client.post(ROTATE_URL, **key("rotate-2"))

    # then the old secret cannot be shown, and nothing rotates either
    secret_now = WebhookSigningSecret.objects.filter(store=store).values_list("secret").first()
    assert again.status_code == 409
    assert again.json()["param"] == "Idempotency-Key"
    assert WebhookSigningSecret.objects.filter(store=store).values_list("secret").first() == (
        secret_now
    )


def test_creation_replayed_after_a_replacing_put_still_shows_the_secret(auth_client, store):
    # a PUT that replaces keeps the secret, so the creation's response is still true
    first = auth_client.put(URL, BODY, **key("put-4"))
    auth_client.put(URL, {**BODY, "enabled": False})

    again = auth_client.put(URL, BODY, **key("put-4"))

    assert again.status_code == 201
    assert again.json()["data"]["secret"] == first.json()["data"]["secret"]
    assert store_secret(store) == first.json()["data"]["secret"]


def test_delete_replayed_does_not_delete_a_destination_created_since(auth_client, store):
    auth_client.put(URL, BODY)
    first = auth_client.delete(URL, **key("delete-1"))
    auth_client.put(URL, BODY)

    again = auth_client.delete(URL, **key("delete-1"))

    assert first.status_code == again.status_code == 204
    assert again[REPLAYED] == "true"
    assert REPLAYED not in first
    assert WebhookChannel.objects.filter(store=store).exists()


def test_delete_key_reused_with_another_request_is_409(auth_client, store):
    auth_client.put(URL, BODY)
    auth_client.delete(URL, **key("delete-2"))
    auth_client.put(URL, BODY)

    response = auth_client.delete(URL, {"force": True}, **key("delete-2"))

    assert response.status_code == 409
    assert WebhookChannel.objects.filter(store=store).exists()


def test_keys_are_scoped_per_operation(auth_client, store):
    # the same key on PUT, rotate and DELETE names three different intended operations
    put = auth_client.put(URL, BODY, **key("shared-key"))
    rotate = auth_client.post(ROTATE_URL, **key("shared-key"))
    delete = auth_client.delete(URL, **key("shared-key"))

    assert (put.status_code, rotate.status_code, delete.status_code) == (201, 200, 204)
    assert not any(REPLAYED in response for response in (put, rotate, delete))


@pytest.mark.parametrize("value", ["", "k" * 256, "caf\u00e9-key"])
@pytest.mark.parametrize(("method", "path"), [("put", URL), ("delete", URL), ("post", ROTATE_URL)])
def test_invalid_keys_are_422_and_change_nothing(auth_client, store, method, path, value):
    auth_client.put(URL, BODY)
    secret = store_secret(store)

    response = getattr(auth_client, method)(
        path, {**BODY, "enabled": False} if method == "put" else None, **key(value)
    )

    assert response.status_code == 422
    assert response.json()["param"] == "Idempotency-Key"
    destination = WebhookChannel.objects.get(store=store)
    assert (store_secret(destination.store), destination.enabled) == (secret, True)


@pytest.mark.parametrize("value", ["k", "k" * 255])
def test_keys_of_1_and_255_characters_are_accepted(auth_client, value):
    first = auth_client.put(URL, BODY, **key(value))
    again = auth_client.put(URL, BODY, **key(value))

    assert first.status_code == again.status_code == 201
    assert again[REPLAYED] == "true"


@pytest.mark.django_db(transaction=True)
def test_concurrent_rotations_under_one_key_rotate_once(store, api_key):
    # given a destination, and four clients retrying one rotation at the same moment
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key}")
    original = client.put(URL, BODY, format="json").json()["data"]["secret"]

    def rotate():
        retrying = APIClient()
        retrying.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key}")
        return retrying.post(ROTATE_URL, **key("rotate-race"))

    # when
    outcomes = run_at_once(rotate, 4)

    # then the secret changed once; every 200 shows that one secret, the rest are in-flight 409s
    assert not [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    destination = WebhookChannel.objects.get(store=store)
    assert store_secret(destination.store, previous=True) == original
    answered = [response for response in outcomes if response.status_code == 200]
    assert answered
    assert {response.json()["data"]["secret"] for response in answered} == {
        store_secret(destination.store)
    }
    assert all(response.status_code in (200, 409) for response in outcomes)


def test_records_stored_before_are_rewritten_by_their_migration(auth_client, user, store):
    # given a creation and a replacement stored in the former shape (URL in clear, the secret's
    # digest bound to no credential)
    from django.apps import apps

    migration = import_module("webhooks.migrations.0010_destination_write_records_withhold")
    body = {**BODY, "url": CREDENTIAL_URL}
    created = auth_client.put(URL, body, **key("old-1")).json()["data"]
    replaced = auth_client.put(URL, {**body, "enabled": False}, **key("old-2")).json()["data"]
    former = {**created, "secret_sha256": "0" * 64}
    del former["secret"]
    IdempotencyKey.objects.filter(key="old-1").update(response_body={"data": former})
    IdempotencyKey.objects.filter(key="old-2").update(response_body={"data": replaced})

    # when the migration runs
    migration.rewrite(apps, None)

    # then neither holds the URL's path or query; the replacement replays in full, and the
    # creation, whose secret's credential is unknown, is a 409 rather than the secret
    assert "hook-credential-123" not in str(list(IdempotencyKey.objects.values()))
    again = auth_client.put(URL, {**body, "enabled": False}, **key("old-2"))
    assert (again.status_code, again.json()["data"]) == (200, replaced)
    assert auth_client.put(URL, body, **key("old-1")).status_code == 409


def test_a_cli_that_refreshed_its_token_replays_its_own_creation_with_the_secret(
    tokens, client_for, store
):
    # an OAuth installation is one credential across its token refreshes
    first = client_for(tokens["access_token"], HTTP_X_STORE=store.slug).put(
        URL, BODY, **key("cli-put")
    )
    refreshed = refresh(Client(), tokens["refresh_token"]).json()

    again = client_for(refreshed["access_token"], HTTP_X_STORE=store.slug).put(
        URL, BODY, **key("cli-put")
    )

    assert first.status_code == again.status_code == 201
    assert again[REPLAYED] == "true"
    assert again.json()["data"]["secret"] == first.json()["data"]["secret"]
