"""DATABASE_REPLICA_URL (config/settings/base.py, docs/configuration.md): optional, PostgreSQL
only, and a replica whose connection gives up quickly; the reads it serves are tested against a
real standby in tests/events/test_event_replica.py."""

from tests.settings_helpers import production_environment, run_python, settings_of

REPLICA_URL = "postgres://reader@replica.internal:6432/storefront"


def test_without_a_replica_url_every_read_stays_on_the_primary():
    environment = production_environment(DATABASE_REPLICA_URL=None)

    databases = settings_of(environment, "DATABASES")["DATABASES"]

    assert set(databases) == {"default"}


def test_a_replica_url_adds_the_replica_with_a_short_connect_timeout():
    environment = production_environment(
        DATABASE_REPLICA_URL=REPLICA_URL, DATABASE_REPLICA_MAX_LAG_SECONDS="2.5"
    )

    found = settings_of(environment, "DATABASES", "DATABASE_REPLICA_MAX_LAG_SECONDS")

    replica = found["DATABASES"]["replica"]
    assert (replica["HOST"], replica["PORT"], replica["NAME"], replica["USER"]) == (
        "replica.internal",
        6432,
        "storefront",
        "reader",
    )
    assert replica["ENGINE"] == found["DATABASES"]["default"]["ENGINE"]
    assert replica["OPTIONS"]["connect_timeout"] == 2
    assert replica["OPTIONS"]["keepalives_idle"] == 60
    assert found["DATABASE_REPLICA_MAX_LAG_SECONDS"] == 2.5


def test_a_replica_url_that_is_not_postgresql_stops_the_process():
    environment = production_environment(DATABASE_REPLICA_URL="sqlite:///replica.db")

    result = run_python("import django; django.setup()", env=environment)

    assert result.returncode != 0
    assert "DATABASE_REPLICA_URL is not a PostgreSQL URL" in result.stderr
