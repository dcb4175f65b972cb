"""The per-request plain-SQL reads run as statements prepared once per PostgreSQL session
(config/db.py): prepared on a session's first request, reused after, prepared again on a new
session, and sent as plain SQL when DATABASE_PREPARED_STATEMENTS is off (behind a pooler that
resets sessions)."""

import pytest
from django.db import ProgrammingError, connection, transaction
from django.test.utils import CaptureQueriesContext

from coupons.models import Coupon
from coupons.selectors import coupon_page
from tests.factories import make_api_key

STATEMENTS = {"storefront_coupon_page_without"}


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
    assert executed(second).count("EXECUTE storefront_coupon_page_without") == 1

    connection.close()  # a new session has none of them, and prepares them again
    assert not STATEMENTS & prepared_in_session()
    get_me_and_coupons(store_client)
    assert prepared_in_session() >= STATEMENTS


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
def test_turned_off_the_same_sql_is_sent_as_is_and_survives_a_session_reset(settings, store_client):
    settings.DATABASE_PREPARED_STATEMENTS = False
    connection.close()
    get_me_and_coupons(store_client)
    assert not STATEMENTS & prepared_in_session()
    with connection.cursor() as cursor:
        cursor.execute("DISCARD ALL")  # what a transaction-mode pooler does between clients
    get_me_and_coupons(store_client)


@pytest.mark.django_db(transaction=True)
def test_a_session_that_lost_its_statements_prepares_them_again(store_client):
    get_me_and_coupons(store_client)
    with connection.cursor() as cursor:
        cursor.execute("DISCARD ALL")  # what a pooler in session mode does between clients
    assert not STATEMENTS & prepared_in_session()

    get_me_and_coupons(store_client)

    assert prepared_in_session() >= STATEMENTS


@pytest.fixture
def code_column_as_text():
    """A migration that changes the type of a column the coupon page returns, undone after."""
    column_type = f"varchar({Coupon._meta.get_field('code').max_length})"
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE coupons_coupon ALTER COLUMN code TYPE text")
    yield
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE coupons_coupon ALTER COLUMN code TYPE {column_type}")


@pytest.mark.django_db(transaction=True)
def test_a_statement_whose_result_type_changed_is_prepared_again(request, store_client):
    get_me_and_coupons(store_client)  # prepared with code as varchar
    request.getfixturevalue("code_column_as_text")

    # PostgreSQL refuses the old plan ("cached plan must not change result type"): prepared
    # again, the request is answered
    get_me_and_coupons(store_client)


@pytest.mark.django_db(transaction=True)
def test_inside_a_transaction_a_lost_statement_is_an_error(store_client, store):
    get_me_and_coupons(store_client)
    with connection.cursor() as cursor:
        cursor.execute("DISCARD ALL")
    # the transaction is aborted by the failed EXECUTE: nothing to retry in it
    with pytest.raises(ProgrammingError), transaction.atomic():
        coupon_page(store=store, trashed="without", offset=0, limit=15)
