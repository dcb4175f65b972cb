"""Every web request's SQL runs under DATABASE_STATEMENT_TIMEOUT_SECONDS: a statement past it is
stopped by PostgreSQL and answered with the 503 envelope and Retry-After, and the connection
serves the next request; SQL outside a request (tasks, commands, migrations) has no limit."""

import time

import pytest
from django.db import connection

from tests.core.api.envelope import assert_envelope

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.urls("tests.core.api.urls")]

DATABASE = "/api/v2/test-database"


@pytest.fixture
def short_timeout(settings):
    """A timeout of 0.2 s, on a connection the request opens (as each web process opens its
    own); closed after the test, so the suite's next statements run without it."""
    settings.DATABASE_STATEMENT_TIMEOUT_SECONDS = 0.2
    connection.close()
    yield
    connection.close()


def running_sleeps() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
            "AND query LIKE 'SELECT pg_sleep%%' AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


@pytest.mark.parametrize("atomic", [False, True], ids=["autocommit", "in-a-transaction"])
def test_a_statement_past_the_timeout_is_a_503_and_stops_in_the_database(
    short_timeout, api_client, atomic
):
    started = time.monotonic()
    response = api_client.get(DATABASE, {"sleep": 30, **({"atomic": 1} if atomic else {})})
    took = time.monotonic() - started

    assert_envelope(response, 503, "api_error", "service_unavailable")
    assert response["Retry-After"] == "1"
    assert took < 5
    assert running_sleeps() == 0
    # The same connection serves the next request, outside any transaction.
    assert not connection.in_atomic_block
    assert api_client.get(DATABASE, {"sleep": 0}).status_code == 200


def test_a_request_runs_under_the_timeout_and_other_sql_does_not(short_timeout, api_client):
    in_request = api_client.get(DATABASE).json()["data"]["statement_timeout"]
    connection.close()
    with connection.cursor() as cursor:  # opened outside a request: a task, a command
        cursor.execute("SHOW statement_timeout")
        outside = cursor.fetchone()[0]

    assert in_request == "200ms"
    assert outside == "0"


def test_zero_turns_the_timeout_off(settings, api_client):
    settings.DATABASE_STATEMENT_TIMEOUT_SECONDS = 0
    connection.close()
    try:
        assert api_client.get(DATABASE).json()["data"]["statement_timeout"] == "0"
    finally:
        connection.close()


@pytest.mark.parametrize("sqlstate", ["40P01", "40001"], ids=["deadlock", "serialization"])
def test_a_transaction_the_database_ended_for_another_is_a_503_to_retry(api_client, sqlstate):
    response = api_client.get(DATABASE, {"ended": sqlstate})

    assert_envelope(response, 503, "api_error", "service_unavailable")
    assert response["Retry-After"] == "1"
    # Nothing of it was kept, and the connection serves the next request.
    assert not connection.in_atomic_block
    assert api_client.get(DATABASE, {"sleep": 0}).status_code == 200


@pytest.mark.parametrize("query", [{"ended": "40P01"}, {"sleep": 30}], ids=["ended", "timeout"])
def test_a_page_outside_the_api_answers_the_503_page_too(short_timeout, client, query):
    response = client.get("/test-database-page", query)

    assert response.status_code == 503
    assert response["Retry-After"] == "1"
    assert "The service is busy" in response.content.decode()
    assert running_sleeps() == 0
