from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"

    def ready(self):
        from core.database.list_totals import registered
        from core.operations import health
        from core.operations.metrics.views import SCRAPE_COLLECTORS
        from events import partitions
        from events.models import Event
        from events.services import event_recorded
        from webhooks import checks  # noqa: F401  (registers the system checks)
        from webhooks.deliveries.services import deliveries_create_for_event
        from webhooks.dispatch.backlog import BacklogCollector, backlog_check
        from webhooks.models import DELIVERY_TOTALS, WebhookDelivery, WebhookDeliveryAttempt

        # Every recorded event of a store with a channel gets its delivery, in the event's
        # transaction (events knows nothing of webhooks).
        event_recorded.connect(
            deliveries_create_for_event, sender=Event, dispatch_uid="webhooks.deliveries"
        )
        # The backlog on /metrics and /status, the delivery list's totals for recount_lists
        # (config knows nothing of webhooks).
        SCRAPE_COLLECTORS.append(BacklogCollector())
        health.status_check_add("webhook_backlog", backlog_check)
        registered["deliveries"] = DELIVERY_TOTALS
        # Deliveries and attempts are partitioned by their event's day and dropped with it;
        # a dropped day of deliveries lowers the delivery totals as deleted rows would.
        partitions.alongside_register(
            WebhookDelivery._meta.db_table, before_drop=delivery_totals_lower
        )
        partitions.alongside_register(WebhookDeliveryAttempt._meta.db_table)


def delivery_totals_lower(cursor, partition: str) -> None:
    from webhooks.models import DELIVERY_TOTALS

    for statement in DELIVERY_TOTALS.partition_drop_sql(partition):
        cursor.execute(statement)
