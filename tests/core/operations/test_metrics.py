"""GET /metrics: who may scrape it, and the service's counters and backlog gauges moving."""

import ipaddress
import re
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.db import connection, transaction
from django.test import Client
from django.utils import timezone

from events.services import record
from oauth_cli.services import cli_application_ensure
from tests.core.operations.metrics import scrape, value
from tests.oauth_cli.flow import connect, refresh
from webhooks.channels.destination import destination_put
from webhooks.models import WebhookChannel, WebhookDelivery

pytestmark = pytest.mark.django_db


# -- access -------------------------------------------------------------------------------


def test_without_allow_list_or_token_it_is_the_sites_ordinary_404(client, settings):
    settings.METRICS_ALLOWED_NETWORKS = ()
    settings.METRICS_BEARER_TOKEN = ""
    refused = client.get("/metrics")
    unknown = client.get("/no-such-page")
    assert refused.status_code == 404
    assert refused["Content-Type"] == unknown["Content-Type"]
    assert b"storefront_" not in refused.content


def test_an_allow_listed_address_gets_the_text_format(scraper):
    response = scraper.get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    assert response["Cache-Control"] == "no-store"
    assert b"storefront_events_recorded_total" in response.content
    assert b"django_http_requests_total_by_method_total" in response.content


def test_networks_are_matched_by_cidr(client, settings):
    settings.METRICS_ALLOWED_NETWORKS = (ipaddress.ip_network("10.0.0.0/8"),)
    assert client.get("/metrics", REMOTE_ADDR="10.20.30.40").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="11.0.0.1").status_code == 404


def test_x_forwarded_for_is_not_believed_without_trusted_proxies(client, settings):
    settings.METRICS_ALLOWED_NETWORKS = (ipaddress.ip_network("10.0.0.1"),)
    response = client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR="10.0.0.1")
    assert response.status_code == 404


def test_behind_a_trusted_proxy_the_forwarded_client_address_counts(client, settings):
    settings.REST_FRAMEWORK = {**django_settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    settings.METRICS_ALLOWED_NETWORKS = (ipaddress.ip_network("10.0.0.1"),)
    # the proxy (127.0.0.1) itself is not on the list: only the client it forwards for
    assert client.get("/metrics", HTTP_X_FORWARDED_FOR="10.0.0.1").status_code == 200
    assert client.get("/metrics", HTTP_X_FORWARDED_FOR="10.0.0.2").status_code == 404


def test_the_bearer_token_opens_it_from_any_address(client, settings):
    settings.METRICS_ALLOWED_NETWORKS = ()
    settings.METRICS_BEARER_TOKEN = "scrape-secret-1234567890"
    ok = client.get(
        "/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer scrape-secret-1234567890"
    )
    assert ok.status_code == 200
    wrong = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-secret-123456789X")
    assert wrong.status_code == 404


def test_no_token_configured_means_no_token_is_accepted(client, settings):
    settings.METRICS_ALLOWED_NETWORKS = ()
    settings.METRICS_BEARER_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 404


def test_other_methods_are_405_for_a_scraper_and_404_for_anyone_else(scraper, client, settings):
    response = scraper.post("/metrics")
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"
    assert response.json()["code"] == "method_not_allowed"
    settings.METRICS_ALLOWED_NETWORKS = ()
    assert client.post("/metrics", REMOTE_ADDR="203.0.113.9").status_code == 404


# -- counters -----------------------------------------------------------------------------


def test_recorded_events_are_counted_by_type(scraper, store):
    before = scrape(scraper)
    with transaction.atomic():
        record(store=store, type="coupon.created", subject=("coupon", 1))
        record(store=store, type="coupon.created", subject=("coupon", 2))
    after = scrape(scraper)
    name = "storefront_events_recorded_total"
    created = {"type": "coupon.created"}
    deleted = {"type": "coupon.deleted"}
    assert value(after, name, **created) - value(before, name, **created) == 2
    assert value(after, name, **deleted) == value(before, name, **deleted)


def test_database_queries_are_counted(scraper, store):
    # django-prometheus' backend wrapper (config/settings/base.py DATABASES)
    name = "django_db_execute_total"
    labels = {"alias": "default", "vendor": "postgresql"}
    first = value(scrape(scraper), name, **labels)
    second = value(scrape(scraper), name, **labels)  # a scrape's own backlog queries
    with connection.cursor() as cursor:
        for _ in range(3):
            cursor.execute("SELECT 1")
    third = value(scrape(scraper), name, **labels)
    assert second > first  # the backlog gauges' queries are counted too
    assert (third - second) - (second - first) == 3


@pytest.mark.usefixtures("frozen_rate_limit_clock")
def test_rate_limit_refusals_are_counted(scraper, auth_client, settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 1
    name = "storefront_rate_limit_refusals_total"
    before = value(scrape(scraper), name, limit="cred")
    assert auth_client.get("/api/v2/me").status_code == 200
    assert auth_client.get("/api/v2/me").status_code == 429
    assert auth_client.get("/api/v2/me").status_code == 429
    assert value(scrape(scraper), name, limit="cred") - before == 2


def test_sign_in_lockouts_are_counted(scraper, user, settings):
    settings.AXES_FAILURE_LIMIT = 1
    name = "storefront_sign_in_lockouts_total"
    before = value(scrape(scraper), name)
    wrong = {"username": user.username, "password": "not-the-password"}
    assert Client().post("/accounts/login/", wrong).status_code == 429
    assert Client().post("/accounts/login/", wrong).status_code == 429
    assert value(scrape(scraper), name) - before == 2


@pytest.mark.usefixtures("frozen_rate_limit_clock")
def test_oauth_endpoint_rate_limit_refusals_are_counted(scraper, settings):
    settings.OAUTH_RATE_LIMIT_PER_MINUTE = 1
    name = "storefront_rate_limit_refusals_total"
    before = value(scrape(scraper), name, limit="oauth")
    browser = Client()
    browser.get("/.well-known/oauth-authorization-server")
    assert browser.get("/.well-known/oauth-authorization-server").status_code == 429
    assert value(scrape(scraper), name, limit="oauth") - before == 1


def test_token_exchanges_and_refusals_are_counted(scraper, user):
    cli_application_ensure()
    name = "storefront_oauth_token_requests_total"
    issued = {"outcome": "issued", "error": ""}
    refused = {"outcome": "refused", "error": "invalid_grant"}
    before = scrape(scraper)
    browser = Client()
    browser.force_login(user)
    tokens = connect(browser)
    assert refresh(Client(), "not-a-refresh-token").status_code == 400
    assert refresh(Client(), tokens["refresh_token"]).status_code == 200
    after = scrape(scraper)

    def moved(grant_type, labels):
        return value(after, name, grant_type=grant_type, **labels) - value(
            before, name, grant_type=grant_type, **labels
        )

    assert moved("authorization_code", issued) == 1
    assert moved("refresh_token", issued) == 1
    assert moved("refresh_token", refused) == 1


# -- backlog gauges -----------------------------------------------------------------------


@pytest.fixture
def channel(store):
    channel, _ = destination_put(
        store=store, url="https://hooks.example.com/in", event_types=["coupon.created"]
    )
    return channel


def make_delivery(store, channel, *, status="pending", next_attempt_at=None):
    with transaction.atomic():
        event = record(store=store, type="coupon.created", subject=("coupon", 1))
    delivery = WebhookDelivery.objects.get(event=event)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status=status, next_attempt_at=next_attempt_at
    )
    return delivery


def test_backlog_gauges_count_pending_due_and_the_oldest_due(scraper, store, channel):
    now = timezone.now()
    make_delivery(store, channel, next_attempt_at=now - timedelta(seconds=300))
    make_delivery(store, channel, next_attempt_at=now - timedelta(seconds=10))
    make_delivery(store, channel, next_attempt_at=now + timedelta(hours=1))
    make_delivery(store, channel, status="succeeded")
    samples = scrape(scraper)
    assert value(samples, "storefront_metrics_backlog_up") == 1
    assert value(samples, "storefront_webhook_deliveries_pending") == 3
    assert value(samples, "storefront_webhook_deliveries_due") == 2
    age = value(samples, "storefront_webhook_oldest_due_delivery_age_seconds")
    assert 300 <= age < 360


def test_an_empty_backlog_is_zero(scraper):
    samples = scrape(scraper)
    assert value(samples, "storefront_webhook_deliveries_pending") == 0
    assert value(samples, "storefront_webhook_deliveries_due") == 0
    assert value(samples, "storefront_webhook_oldest_due_delivery_age_seconds") == 0


def test_counts_stop_at_the_cap(scraper, settings, store, channel):
    settings.METRICS_BACKLOG_COUNT_CAP = 2
    for _ in range(3):
        make_delivery(store, channel, next_attempt_at=timezone.now())
    samples = scrape(scraper)
    assert value(samples, "storefront_webhook_deliveries_pending") == 2
    assert value(samples, "storefront_webhook_deliveries_due") == 2


def test_disabled_channels_are_counted_by_reason(scraper, store, other_store, channel):
    WebhookChannel.objects.filter(pk=channel.pk).update(
        enabled=False, disabled_reason=WebhookChannel.DISABLED_GONE
    )
    destination_put(
        store=other_store, url="https://hooks.example.com/b", event_types=[], enabled=False
    )
    samples = scrape(scraper)
    name = "storefront_webhook_channels_disabled"
    assert value(samples, name, reason="gone") == 1
    assert value(samples, name, reason="user") == 1
    assert value(samples, name, reason="failing") == 0


def test_a_failing_backlog_query_reports_down_and_the_scrape_still_answers(scraper, monkeypatch):
    from webhooks.dispatch import backlog as backlog

    def broken(now):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(5)")  # beyond the scrape's statement timeout

    monkeypatch.setattr(backlog, "STATEMENT_TIMEOUT_MS", 100)
    monkeypatch.setattr(backlog, "backlog_read", broken)
    samples = scrape(scraper)
    assert value(samples, "storefront_metrics_backlog_up") == 0
    assert ("storefront_webhook_deliveries_pending", frozenset()) not in samples


# -- the queries are indexed --------------------------------------------------------------


def plan(queryset) -> str:
    """EXPLAIN with sequential scans priced out: the plan uses an index if one matches."""
    sql, params = queryset.query.sql_with_params()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_backlog_queries_walk_the_partial_pending_index():
    now = timezone.now()
    cap = 100_000
    queries = {
        "pending": WebhookDelivery.objects.filter(status="pending").order_by().values("pk")[:cap],
        "due": WebhookDelivery.objects.due(now).order_by().values("pk")[:cap],
        "oldest due": WebhookDelivery.objects.due(now)
        .order_by("next_attempt_at")
        .values("next_attempt_at")[:1],
    }
    # The deliveries are partitioned by day: each day's partition has its own copy of the
    # partial indexes of pending deliveries (status = 'pending'), named after the partition.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT child.relname FROM pg_inherits JOIN pg_class child "
            "ON child.oid = pg_inherits.inhrelid WHERE pg_inherits.inhparent IN "
            "('delivery_due_idx'::regclass, 'delivery_channel_due_idx'::regclass)"
        )
        pending_indexes = {row[0] for row in cursor.fetchall()}
    assert pending_indexes
    for name, queryset in queries.items():
        text = plan(queryset)
        used = set(re.findall(r" using (\S+)", text))
        # either partial index of pending deliveries serves the count, on every partition
        assert used and used <= pending_indexes, (name, text)
        assert "Seq Scan" not in text, (name, text)
