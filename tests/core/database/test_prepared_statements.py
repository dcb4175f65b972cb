"""core/database/connections.py's PreparedStatement, which the webhook worker's claim, outcome and
send-slot
statements use (the request path has none: the identity is kept per process and
the coupon page is read through the ORM): prepared on a session's first run, reused after,
prepared again on a new session or after a reset, and sent as plain SQL when
DATABASE_PREPARED_STATEMENTS is off (behind a pooler that resets sessions)."""

import pytest
from django.db import ProgrammingError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.database.connections import PreparedStatement
from stores.models import Store
from tests.factories import StoreFactory

STORES_ABOVE = PreparedStatement(
    "storefront_test_stores_above",
    "SELECT id, slug FROM stores_store WHERE id > %(floor)s ORDER BY id",
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def stores():
    return [StoreFactory().slug for _ in range(2)]


def run() -> list[str]:
    with connection.cursor() as cursor:
        STORES_ABOVE.execute(cursor, {"floor": 0})
        return [slug for _, slug in cursor.fetchall()]


def prepared_in_session() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM pg_prepared_statements")
        return {name for (name,) in cursor.fetchall()}


def sent(queries) -> list[str]:
    return [query["sql"].split("(")[0].split(" AS ")[0] for query in queries]


def test_each_session_prepares_it_once(stores):
    connection.close()  # a fresh session
    with CaptureQueriesContext(connection) as first:
        assert run() == stores
    with CaptureQueriesContext(connection) as second:
        assert run() == stores

    assert sent(first) == [
        "SET plan_cache_mode = force_generic_plan",
        "PREPARE storefront_test_stores_above",
        "EXECUTE storefront_test_stores_above",
    ]
    assert sent(second) == ["EXECUTE storefront_test_stores_above"]
    connection.close()  # a new session has none, and prepares it again
    assert STORES_ABOVE.name not in prepared_in_session()
    assert run() == stores
    assert STORES_ABOVE.name in prepared_in_session()


def test_a_statement_naming_a_partition_key_is_planned_once_not_at_every_run(store):
    # given a statement on the partitioned deliveries that names their partition key, as the
    # worker's outcome does (a custom plan would prune at planning time, so PostgreSQL would
    # keep planning it: docs/benchmarks/webhooks.md "Partitioned by day")
    by_day = PreparedStatement(
        "storefront_test_deliveries_of_day",
        "SELECT count(*) FROM webhooks_webhookdelivery "
        "WHERE id = %(id)s AND event_occurred_at = %(day)s",
    )
    connection.close()
    # when it runs ten times in a session
    with connection.cursor() as cursor:
        for _ in range(10):
            by_day.execute(
                cursor, {"id": "00000000-0000-0000-0000-000000000001", "day": timezone.now()}
            )
        cursor.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = %s",
            [by_day.name],
        )
        # then every run used the one generic plan (pruned when it starts), none planned anew
        assert cursor.fetchone() == (10, 0)


def test_a_rolled_back_transaction_keeps_the_session_s_statement(stores):
    connection.close()
    with transaction.atomic():
        run()
        transaction.set_rollback(True)
    # PREPARE is not transactional: the statement is still there, and EXECUTE finds it.
    assert STORES_ABOVE.name in prepared_in_session()
    assert run() == stores


def test_turned_off_the_same_sql_is_sent_as_is_and_survives_a_session_reset(settings, stores):
    settings.DATABASE_PREPARED_STATEMENTS = False
    connection.close()
    assert run() == stores
    assert STORES_ABOVE.name not in prepared_in_session()
    with connection.cursor() as cursor:
        cursor.execute("DISCARD ALL")  # what a transaction-mode pooler does between clients
    assert run() == stores


def test_a_session_that_lost_its_statement_prepares_it_again(stores):
    run()
    with connection.cursor() as cursor:
        cursor.execute("DISCARD ALL")  # what a pooler in session mode does between clients
    assert STORES_ABOVE.name not in prepared_in_session()

    assert run() == stores

    assert STORES_ABOVE.name in prepared_in_session()


@pytest.fixture
def slug_column_as_text():
    """A migration that changes the type of a column the statement returns, undone after."""
    column_type = f"varchar({Store._meta.get_field('slug').max_length})"
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE stores_store ALTER COLUMN slug TYPE text")
    yield
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE stores_store ALTER COLUMN slug TYPE {column_type}")


def test_a_statement_whose_result_type_changed_is_prepared_again(request, stores):
    run()  # prepared with slug as varchar
    request.getfixturevalue("slug_column_as_text")

    # PostgreSQL refuses the old plan ("cached plan must not change result type"): prepared
    # again, it answers
    assert run() == stores


def test_inside_a_transaction_a_lost_statement_is_an_error(stores):
    run()
    with connection.cursor() as cursor:
        cursor.execute("DISCARD ALL")
    # the transaction is aborted by the failed EXECUTE: nothing to retry in it
    with pytest.raises(ProgrammingError), transaction.atomic():
        run()
