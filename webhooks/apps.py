from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"

    def ready(self):
        from config import health
        from config.list_totals import registered
        from config.metrics.views import SCRAPE_COLLECTORS
        from events import subscribers
        from webhooks import checks  # noqa: F401  (registers the system checks)
        from webhooks.metrics import BacklogCollector, backlog_check
        from webhooks.models import DELIVERY_TOTALS
        from webhooks.services import deliveries_create_for_event

        # Every recorded event of a store with a destination gets its delivery, in the event's
        # transaction (events knows nothing of webhooks).
        subscribers.subscribe(deliveries_create_for_event)
        # The backlog on /metrics and /status, the delivery list's totals for recount_lists
        # (config knows nothing of webhooks).
        SCRAPE_COLLECTORS.append(BacklogCollector())
        health.status_check_add("webhook_backlog", backlog_check)
        registered["deliveries"] = DELIVERY_TOTALS
