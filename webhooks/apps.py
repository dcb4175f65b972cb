from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"

    def ready(self):
        from config.list_totals import registered
        from events import subscribers
        from webhooks import checks  # noqa: F401  (registers the system checks)
        from webhooks.models import DELIVERY_TOTALS
        from webhooks.services import deliveries_create_for_event

        # Every recorded event of a store with a destination gets its delivery, in the event's
        # transaction (events knows nothing of webhooks).
        subscribers.subscribe(deliveries_create_for_event)
        registered["deliveries"] = DELIVERY_TOTALS
