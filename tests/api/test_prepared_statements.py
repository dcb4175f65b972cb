"""The per-request plain-SQL reads run as statements prepared once per PostgreSQL session
(config/db.py): prepared on a session's first request, reused after, prepared again on a new
session, and sent as plain SQL when DATABASE_PREPARED_STATEMENTS is off (behind a pooler that
resets sessions)."""

import pytest
from django.db import ProgrammingError, connection, transaction
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext

from accounts.models import ApiKey
from stores.credentials import credential_for_api_key
from tests.factories import MembershipFactory, make_api_key

STATEMENTS = {
    "storefront_live_api_key",
    "storefront_membership_for_slug",
}


def prepared_in_session() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM pg_prepared_statements")
        return {name for (name,) in cursor.fetchall()}


def executed(queries) -> list[str]:
    return [query["sql"].split("(")[0].split(" AS ")[0] for query in queries]


@pytest.fixture
def store_client(client_for, user, store):
    return client_for(make_api_key(user), HTTP_X_STORE=store.slug)


def get_me_and_coupons(client) -> None:
    assert client.get("/api/v2/me").status_code == 200
    assert client.get("/api/v1/coupons").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_each_session_prepares_the_statements_once(store_client):
    connection.close()  # a fresh session
    with CaptureQueriesContext(connection) as first:
        get_me_and_coupons(store_client)
    assert prepared_in_session() >= STATEMENTS
    with CaptureQueriesContext(connection) as second:
        get_me_and_coupons(store_client)

    prepares = [sql for sql in executed(first) if sql.startswith("PREPARE")]
    assert sorted(prepares) == sorted(f"PREPARE {name}" for name in STATEMENTS)
    assert not [sql for sql in executed(second) if sql.startswith("PREPARE")]
    assert executed(second).count("EXECUTE storefront_live_api_key") == 2

    connection.close()  # a new session has none of them, and prepares them again
    assert not STATEMENTS & prepared_in_session()
    get_me_and_coupons(store_client)
    assert prepared_in_session() >= STATEMENTS


@pytest.mark.django_db(transaction=True)
def test_a_request_without_x_store_reads_key_and_store_in_one_prepared_statement(
    client_for, user, store
):
    connection.close()
    client = client_for(make_api_key(user))
    with CaptureQueriesContext(connection) as queries:
        for _ in range(2):
            assert client.get("/api/v2/permissions").status_code == 200
    assert executed(queries).count("EXECUTE storefront_live_api_key_default_membership") == 2
    assert "EXECUTE storefront_live_api_key" not in executed(queries)
    assert "storefront_live_api_key_default_membership" in prepared_in_session()


@pytest.mark.django_db(transaction=True)
def test_a_request_with_x_store_reads_no_default_membership(store_client):
    connection.close()
    with CaptureQueriesContext(connection) as queries:
        get_me_and_coupons(store_client)
    assert executed(queries).count("EXECUTE storefront_live_api_key") == 2
    assert "storefront_live_api_key_default_membership" not in prepared_in_session()


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_transaction_keeps_the_session_s_statements(store_client):
    connection.close()
    with transaction.atomic():
        get_me_and_coupons(store_client)
        transaction.set_rollback(True)
    # PREPARE is not transactional: the statements are still there, and EXECUTE finds them.
    assert prepared_in_session() >= STATEMENTS
    get_me_and_coupons(store_client)


@pytest.mark.django_db(transaction=True)
def test_a_revoked_key_fails_on_its_next_request_through_the_prepared_statement(
    client_for, user, store
):
    client = client_for(make_api_key(user))
    assert client.get("/api/v2/me").status_code == 200
    ApiKey.objects.update(revoked_at="2026-01-01T00:00:00Z")
    assert client.get("/api/v2/me").status_code == 401


@pytest.mark.django_db(transaction=True)
def test_turned_off_the_same_sql_is_sent_as_is_and_survives_a_session_reset(settings, store_client):
    settings.DATABASE_PREPARED_STATEMENTS = False
    connection.close()
    get_me_and_coupons(store_client)
    assert not STATEMENTS & prepared_in_session()
    with connection.cursor() as cursor:
        cursor.execute("DISCARD ALL")  # what a transaction-mode pooler does between clients
    get_me_and_coupons(store_client)


@pytest.mark.django_db(transaction=True)
def test_another_users_store_slug_is_not_found_through_the_prepared_statement(
    client_for, user, store
):
    other = MembershipFactory()
    client = client_for(make_api_key(user), HTTP_X_STORE=other.store.slug)
    for _ in range(3):  # first run prepares, later ones EXECUTE
        response = client.get("/api/v1/coupons")
        assert response.status_code == 403, response.content


@pytest.mark.django_db(transaction=True)
def test_a_session_that_lost_its_statements_prepares_them_again(store_client):
    get_me_and_coupons(store_client)
    with connection.cursor() as cursor:
        cursor.execute("DISCARD ALL")  # what a pooler in session mode does between clients
    assert not STATEMENTS & prepared_in_session()

    get_me_and_coupons(store_client)

    assert prepared_in_session() >= STATEMENTS


@pytest.fixture
def store_access_column_as_text():
    """A migration that changes the type of a column the key lookup returns, undone after."""
    column_type = f"varchar({ApiKey._meta.get_field('store_access').max_length})"
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE accounts_apikey ALTER COLUMN store_access TYPE text")
    yield
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE accounts_apikey ALTER COLUMN store_access TYPE {column_type}")


@pytest.mark.django_db(transaction=True)
def test_a_statement_whose_result_type_changed_is_prepared_again(request, store_client):
    get_me_and_coupons(store_client)  # prepared with store_access as varchar
    request.getfixturevalue("store_access_column_as_text")

    # PostgreSQL refuses the old plan ("cached plan must not change result type"): prepared
    # again, the request is answered
    get_me_and_coupons(store_client)


@pytest.mark.django_db(transaction=True)
def test_inside_a_transaction_a_lost_statement_is_an_error(store_client):
    get_me_and_coupons(store_client)
    with connection.cursor() as cursor:
        cursor.execute("DISCARD ALL")
    # the transaction is aborted by the failed EXECUTE: nothing to retry in it
    with pytest.raises(ProgrammingError), transaction.atomic():
        # (named store: the statement the requests above prepared)
        credential_for_api_key("sf_unknown", RequestFactory().get("/", headers={"X-STORE": "s"}))
