"""Probes against the real services: /healthz (liveness), /readyz (database, migrations, cache,
broker) and /status (plus the heartbeats of beat and the workers, and the webhook backlog; the
workers' are tested with real workers in test_worker_heartbeat.py).

Outages are made on this test's own Redis (a redis-server started and stopped here) or by
pointing a setting at a dead port; the suite's shared PostgreSQL and Redis stay up.
"""

import ipaddress
import logging
import socket
import threading
import time
from datetime import timedelta

import pytest
from django.db import connections
from django.db.migrations.recorder import MigrationRecorder
from django.test import Client, override_settings
from django.utils import timezone

from config.celery import app
from core.operations import health
from core.operations.beat import LockedScheduler
from core.operations.worker_heartbeat import worker_heartbeat_task
from tests.core.api.envelope import assert_envelope
from tests.core.operations.metrics import SCRAPER_ADDRESS, scrape, value
from tests.factories import StoreFactory, old_events
from tests.outages import dead_redis_caches, dead_redis_url
from tests.servers import free_port
from tests.settings_helpers import production_environment, settings_of
from webhooks.models import WebhookDelivery


def redis_caches(url):
    return {**dead_redis_caches()["default"], "LOCATION": url}


@pytest.fixture
def broker_at(monkeypatch):
    """Points the Celery app's broker (what the broker check connects to) at another URL."""

    def point(url):
        monkeypatch.setattr(app.conf, "broker_url", url)
        # The check borrows from the app's connection pool, made for the URL of its time.
        monkeypatch.setattr(app, "_pool", None)

    return point


def get_json(path):
    response = Client().get(path)
    return response.status_code, response.json()


# --- /healthz -------------------------------------------------------------------------------


def test_healthz_is_liveness_and_touches_no_dependency(monkeypatch, broker_at):
    # given the database and Redis are both unreachable (no db fixture: any query would fail)
    broker_at(dead_redis_url())
    with override_settings(CACHES=dead_redis_caches()):
        # when / then: the process is alive, so the answer is still 200
        assert get_json("/healthz") == (200, {"status": "ok"})


# --- /readyz --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_readyz_reports_each_dependency_ok():
    status, body = get_json("/readyz")
    assert status == 200
    assert body == {
        "status": "ok",
        "failing": [],
        "checks": {
            "database": {"status": "ok"},
            "cache": {"status": "ok"},
            "broker": {"status": "ok"},
        },
    }


@pytest.mark.django_db
def test_readyz_fails_while_redis_is_stopped_and_recovers_when_it_returns(own_redis, broker_at):
    broker_at(own_redis.url)
    with override_settings(CACHES={"default": redis_caches(own_redis.url)}):
        assert get_json("/readyz")[0] == 200
        # when Redis stops
        own_redis.stop()
        status, body = get_json("/readyz")
        assert status == 503
        assert body["failing"] == ["cache", "broker"]
        assert body["checks"]["cache"] == {"status": "unavailable"}
        assert body["checks"]["database"] == {"status": "ok"}
        # when it returns on the same address
        own_redis.start()
        status, body = get_json("/readyz")
        assert (status, body["failing"]) == (200, [])


@pytest.mark.django_db
def test_readyz_fails_while_postgresql_is_unreachable_and_recovers(monkeypatch):
    # New connections (each check opens its own) go to a port where nothing listens.
    database = connections.settings["default"]
    real_port = database["PORT"]
    monkeypatch.setitem(database, "PORT", str(free_port()))
    status, body = get_json("/readyz")
    assert status == 503
    assert body["failing"] == ["database"]
    assert body["checks"]["database"] == {"status": "unavailable"}
    # when PostgreSQL is reachable again
    monkeypatch.setitem(database, "PORT", real_port)
    assert get_json("/readyz")[0] == 200


@pytest.mark.django_db(transaction=True)
def test_readyz_fails_while_a_migration_is_not_applied():
    applied = MigrationRecorder.Migration.objects.filter(app="webhooks").latest("id")
    applied.delete()
    try:
        status, body = get_json("/readyz")
        assert status == 503
        assert body["failing"] == ["database"]
        assert body["checks"]["database"] == {"status": "migrations_pending", "pending": 1}
    finally:
        MigrationRecorder.Migration.objects.create(
            app=applied.app, name=applied.name, applied=applied.applied
        )
    assert get_json("/readyz")[0] == 200


@pytest.mark.django_db
def test_readyz_answers_in_bounded_time_when_the_broker_hangs(settings, broker_at):
    # given a "broker" that accepts connections and never answers
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted = []
    threading.Thread(target=lambda: accepted.append(server.accept()[0]), daemon=True).start()
    broker_at(f"redis://127.0.0.1:{server.getsockname()[1]}/0")
    settings.HEALTH_CHECK_TIMEOUT_SECONDS = 0.5
    try:
        started = time.monotonic()
        status, body = get_json("/readyz")
        elapsed = time.monotonic() - started
        assert status == 503
        assert body["failing"] == ["broker"]
        assert body["checks"]["broker"]["status"] in {"timeout", "unavailable"}
        assert elapsed < 1.5
    finally:
        # unblocks the check thread still waiting for an answer
        for connection in accepted:
            connection.close()
        server.close()


@pytest.mark.django_db
def test_production_lets_plain_http_probes_through_its_https_redirect(settings):
    production = settings_of(production_environment(), "SECURE_REDIRECT_EXEMPT")
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_REDIRECT_EXEMPT = production["SECURE_REDIRECT_EXEMPT"]
    # load balancers and monitors probe over plain HTTP and do not follow redirects
    for path in ("/healthz", "/readyz", "/status"):
        assert Client().get(path).status_code in {200, 503}, path
    assert Client().get("/api/v2/me").status_code == 301


def test_probes_answer_405_with_allow_to_other_methods():
    for path in ("/healthz", "/readyz", "/status"):
        response = Client().post(path)
        assert response.status_code == 405
        assert response["Allow"] == "GET, HEAD"
        assert response.json()["code"] == "method_not_allowed"


# --- /status: beat heartbeat and webhook backlog --------------------------------------------


def make_scheduler(tmp_path, name):
    return LockedScheduler(app=app, schedule_filename=str(tmp_path / name), lazy=False)


def workers_took_their_heartbeats():
    """What a worker on each queue does with beat's heartbeat (run here, in process)."""
    for queue in ("webhooks", "maintenance"):
        worker_heartbeat_task(queue)


@pytest.mark.django_db
def test_status_reports_beat_ok_after_a_tick_and_stale_after_two_silent_intervals(
    settings, tmp_path, time_machine
):
    # Intervals long enough that a busy machine never makes a fresh heartbeat look stale; the
    # silence is made by moving Python's clock, not by waiting.
    settings.BEAT_HEARTBEAT_SECONDS = 30
    settings.WORKER_HEARTBEAT_SECONDS = 60
    # before any beat ever ticked
    status, body = get_json("/status")
    assert status == 503
    assert body["checks"]["beat"] == {"status": "never_seen", "seconds_since_heartbeat": None}
    # when beat ticks (holding the lock), it records its heartbeat
    scheduler = make_scheduler(tmp_path, "beat")
    try:
        scheduler.tick()
        workers_took_their_heartbeats()
        status, body = get_json("/status")
        assert status == 200, body
        assert body["checks"]["beat"]["status"] == "ok"
        # when it stays silent for more than two intervals (the workers still answering)
        time_machine.move_to(time.time() + 61)
        workers_took_their_heartbeats()
        status, body = get_json("/status")
        assert status == 503
        assert body["failing"] == ["beat"]
        assert body["checks"]["beat"]["status"] == "stale"
        assert body["checks"]["beat"]["seconds_since_heartbeat"] >= 61
    finally:
        scheduler.close()


def delivery_due(store, event, due_seconds_ago):
    return WebhookDelivery.objects.create(
        store=store,
        event=event,
        event_occurred_at=event.occurred_at,
        event_type=event.type,
        destination_origin="https://receiver.example",
        next_attempt_at=timezone.now() - timedelta(seconds=due_seconds_ago),
    )


@pytest.mark.django_db(transaction=True)
def test_status_reports_a_webhook_backlog_older_than_the_configured_age(settings, tmp_path):
    settings.HEALTH_WEBHOOK_BACKLOG_MAX_AGE_SECONDS = 120
    scheduler = make_scheduler(tmp_path, "beat")
    try:
        scheduler.tick()  # a live beat and workers: only the backlog is under test
        workers_took_their_heartbeats()
        store = StoreFactory()
        first, second = old_events(store, 2, age_days=0)
        delivery_due(store, first, due_seconds_ago=30)
        status, body = get_json("/status")
        assert status == 200, body
        assert body["checks"]["webhook_backlog"]["status"] == "ok"
        # when a delivery has waited longer than the configured age
        delivery_due(store, second, due_seconds_ago=600)
        status, body = get_json("/status")
        assert status == 503
        assert body["failing"] == ["webhook_backlog"]
        assert body["checks"]["webhook_backlog"]["status"] == "behind"
        assert body["checks"]["webhook_backlog"]["oldest_due_seconds"] >= 600
    finally:
        scheduler.close()


# --- cost of a flood of probes ----------------------------------------------------------


def unreachable_database(monkeypatch):
    """New connections (each database check opens its own) go to a port nobody listens on;
    returns what makes it reachable again."""
    database = connections.settings["default"]
    real_port = database["PORT"]
    monkeypatch.setitem(database, "PORT", str(free_port()))
    return lambda: monkeypatch.setitem(database, "PORT", real_port)


@pytest.mark.django_db
def test_a_checks_result_serves_the_probes_of_the_next_interval(settings, monkeypatch):
    # Long enough that the test never reaches its end: no clock in the assertion.
    settings.HEALTH_CHECK_RESULT_SECONDS = 60
    assert get_json("/readyz")[0] == 200

    # when the database becomes unreachable, probes within the interval run no new check
    unreachable_database(monkeypatch)
    assert get_json("/readyz")[0] == 200
    # /status shares the readiness checks' runs (its own checks run once, here)
    _, body = get_json("/status")
    assert body["checks"]["database"] == {"status": "ok"}

    # and with no interval every probe runs every check
    settings.HEALTH_CHECK_RESULT_SECONDS = 0
    assert get_json("/readyz")[0] == 503


@pytest.mark.django_db
def test_the_broker_check_reuses_the_pooled_broker_connection(broker):
    from core.operations.health import broker_check

    assert broker_check() == {"status": "ok"}
    received = broker.info("stats")["total_connections_received"]

    for _ in range(5):
        assert broker_check() == {"status": "ok"}

    assert broker.info("stats")["total_connections_received"] == received


@pytest.fixture
def health_log(caplog):
    caplog.set_level(logging.INFO, logger="core.operations.health")
    caplog.set_level(logging.INFO, logger="django.request")

    def records(name, level=None, about=""):
        return [
            r
            for r in caplog.records
            if r.name == name and (level is None or r.levelno == level) and about in r.getMessage()
        ]

    return records


@pytest.mark.django_db
def test_a_failing_check_is_logged_once_when_it_fails_and_once_when_it_recovers(
    monkeypatch, health_log
):
    # ok: nothing to say
    assert get_json("/readyz")[0] == 200
    assert health_log("core.operations.health") == []

    # ok -> failing: one ERROR with the cause, however many probes see it failing
    reachable_again = unreachable_database(monkeypatch)
    for _ in range(3):
        assert get_json("/readyz")[0] == 503
    assert get_json("/status")[0] == 503
    [failed] = health_log("core.operations.health", about="database")
    assert failed.levelno == logging.ERROR
    assert failed.exc_info is not None
    # and no ERROR per 503 response from Django either
    assert health_log("django.request", logging.ERROR) == []

    # failing -> ok: one INFO
    reachable_again()
    for _ in range(3):
        assert get_json("/readyz")[0] == 200
    [_, recovered] = health_log("core.operations.health", about="database")
    assert recovered.levelno == logging.INFO


@pytest.mark.django_db
def test_probes_are_rate_limited_per_client_address(settings, frozen_rate_limit_clock):
    settings.HEALTH_RATE_LIMIT_PER_MINUTE = 3
    prober = Client(REMOTE_ADDR="192.0.2.10")
    for _ in range(3):
        assert prober.get("/readyz").status_code == 200

    response = prober.get("/readyz")

    assert_envelope(response, 429, "rate_limit_error", "rate_limit_exceeded")
    assert int(response["Retry-After"]) >= 1
    # each endpoint its own budget, each address its own
    assert prober.get("/status").status_code in (200, 503)
    assert Client(REMOTE_ADDR="192.0.2.11").get("/readyz").status_code == 200


def test_probes_from_one_ipv6_64_share_a_budget(settings, frozen_rate_limit_clock):
    settings.HEALTH_RATE_LIMIT_PER_MINUTE = 2
    for host in ("2001:db8:5:7::1", "2001:db8:5:7::2"):
        assert Client(REMOTE_ADDR=host).get("/readyz").status_code != 429

    response = Client(REMOTE_ADDR="2001:db8:5:7:ffff::3").get("/readyz")

    assert_envelope(response, 429, "rate_limit_error", "rate_limit_exceeded")
    assert Client(REMOTE_ADDR="2001:db8:5:8::1").get("/readyz").status_code != 429


def test_the_default_probe_limit_lets_a_probe_per_second_through():
    from config.settings import health as health_settings

    # an orchestrator probing each endpoint every second from one address stays within it
    assert health_settings.HEALTH_RATE_LIMIT_PER_MINUTE >= 60


@pytest.mark.django_db
def test_status_reads_workers_never_seen_in_the_first_interval_after_start_as_starting(
    settings, monkeypatch, tmp_path, time_machine
):
    # given: a fresh start (`make run`): beat has ticked once, no worker has taken a heartbeat.
    # Intervals long enough that a busy machine never ends the first one early: the clock is
    # stopped, and the test moves it.
    settings.BEAT_HEARTBEAT_SECONDS = 30
    settings.WORKER_HEARTBEAT_SECONDS = 60
    time_machine.move_to(time.time(), tick=False)
    monkeypatch.setattr(health, "started_at", time.time())
    scheduler = make_scheduler(tmp_path, "beat")
    try:
        scheduler.tick()

        # when: within the workers' first allowed silence (2 x 60 + 30 s)
        status, body = get_json("/status")

        # then: starting, not a failure
        assert status == 200, body
        assert body["failing"] == []
        for queue in ("webhooks", "maintenance"):
            assert body["checks"][f"worker_{queue}"] == {
                "status": "starting",
                "seconds_since_heartbeat": None,
            }

        # when: that interval has passed and still no worker was seen
        time_machine.shift(2 * 60 + 30 + 1)
        scheduler.tick()
        status, body = get_json("/status")

        # then: never seen is a failure, as before
        assert status == 503
        assert body["failing"] == ["worker_webhooks", "worker_maintenance"]
        assert body["checks"]["worker_webhooks"]["status"] == "never_seen"
    finally:
        scheduler.close()


@pytest.mark.django_db
def test_metrics_carry_each_status_check_and_the_heartbeat_ages(settings, tmp_path):
    # given: beat has ticked, no worker ever took a heartbeat (past the starting window); an
    # interval long enough that a busy machine never makes the fresh heartbeat look stale
    settings.METRICS_ALLOWED_NETWORKS = (ipaddress.ip_network(SCRAPER_ADDRESS),)
    settings.BEAT_HEARTBEAT_SECONDS = 30
    scheduler = make_scheduler(tmp_path, "beat")
    try:
        scheduler.tick()

        # when
        samples = scrape(Client())
    finally:
        scheduler.close()

    # then: what /status answers, one gauge per check, for the alerts of deploy/alerts.yml
    passing = "storefront_health_check_passing"
    for check in ("database", "cache", "broker", "beat", "webhook_backlog"):
        assert value(samples, passing, check=check) == 1, check
    assert value(samples, passing, check="worker_webhooks") == 0
    assert 0 <= value(samples, "storefront_heartbeat_age_seconds", check="beat") < 5
    heartbeat_ages = {
        labels for name, labels in samples if name == "storefront_heartbeat_age_seconds"
    }
    assert heartbeat_ages == {frozenset({("check", "beat")})}
