"""Gauges of the webhook backlog, computed from the database when /metrics is scraped, and
/status's webhook_backlog check: both registered in WebhooksConfig.ready (config imports no app).

They describe shared state (rows), not one process, so any web worker can compute them and no
worker has to keep them up to date. Every query is bounded: counts stop at
METRICS_BACKLOG_COUNT_CAP rows and walk the partial index `delivery_due_idx` (status pending,
on next_attempt_at); the oldest due delivery is the first entry of that index. The queries run
under a short statement timeout: a slow database makes the scrape report
`storefront_metrics_backlog_up 0`, not hang (docs/metrics.md shows their plans).
"""

import logging
from collections import Counter

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from core.operations.health import OK
from webhooks.models import WebhookChannel, WebhookDelivery

logger = logging.getLogger(__name__)

STATEMENT_TIMEOUT_MS = 2000


def oldest_due_age_seconds(now) -> float:
    """Seconds since the oldest due delivery became due (0 when none is due): the first entry
    of delivery_due_idx."""
    oldest_due_at = (
        WebhookDelivery.objects.due(now)
        .order_by("next_attempt_at")
        .values_list("next_attempt_at", flat=True)
    ).first()
    return max((now - oldest_due_at).total_seconds(), 0.0) if oldest_due_at else 0.0


def backlog_check() -> dict:
    """/status's webhook_backlog: the same reading as the /metrics gauge."""
    age = oldest_due_age_seconds(timezone.now())
    return {
        "status": OK if age <= settings.HEALTH_WEBHOOK_BACKLOG_MAX_AGE_SECONDS else "behind",
        "oldest_due_seconds": round(age, 1),
    }


def backlog_read(now) -> dict:
    """The backlog as numbers: pending, due, oldest due age (s), disabled channels."""
    cap = settings.METRICS_BACKLOG_COUNT_CAP
    disabled = (
        WebhookChannel.objects.filter(enabled=False)
        .order_by()
        .values_list("disabled_reason", flat=True)[:cap]
    )
    # No reason: turned off in the admin.
    by_reason = Counter(reason or WebhookChannel.DISABLED_BY_USER for reason in disabled.iterator())
    return {
        "pending": WebhookDelivery.objects.filter(status=WebhookDelivery.STATUS_PENDING)
        .order_by()
        .values("pk")[:cap]
        .count(),
        "due": WebhookDelivery.objects.due(now).order_by().values("pk")[:cap].count(),
        "oldest_due_age_seconds": oldest_due_age_seconds(now),
        "disabled_channels": by_reason,
    }


class BacklogCollector:
    """A prometheus_client collector: one set of queries per scrape."""

    def collect(self):
        up = GaugeMetricFamily(
            "storefront_metrics_backlog_up",
            "1 when the backlog gauges below could be read from the database, else 0.",
        )
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute(f"SET LOCAL statement_timeout = {STATEMENT_TIMEOUT_MS}")
                backlog = backlog_read(timezone.now())
        except Exception:
            logger.warning("metrics: the webhook backlog could not be read", exc_info=True)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        cap = settings.METRICS_BACKLOG_COUNT_CAP
        yield GaugeMetricFamily(
            "storefront_webhook_deliveries_pending",
            f"Webhook deliveries waiting for an attempt or a retry (counted up to {cap}).",
            value=backlog["pending"],
        )
        yield GaugeMetricFamily(
            "storefront_webhook_deliveries_due",
            f"Pending webhook deliveries whose next attempt is due now (counted up to {cap}).",
            value=backlog["due"],
        )
        yield GaugeMetricFamily(
            "storefront_webhook_oldest_due_delivery_age_seconds",
            "Seconds since the oldest due webhook delivery became due (0 when none is due): "
            "how far behind the workers are.",
            value=backlog["oldest_due_age_seconds"],
        )
        disabled = GaugeMetricFamily(
            "storefront_webhook_channels_disabled",
            "Disabled webhook channels by reason: user, gone (410), failing.",
            labels=["reason"],
        )
        for reason, _label in WebhookChannel.DISABLED_REASONS:
            disabled.add_metric([reason], backlog["disabled_channels"].get(reason, 0))
        yield disabled
