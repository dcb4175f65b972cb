from django.apps import AppConfig


class EventsConfig(AppConfig):
    name = "events"

    def ready(self):
        from core.operations import health, metrics
        from core.operations.metrics.views import SCRAPE_COLLECTORS
        from events.partitions import PartitionsCollector, partitions_check
        from events.registry import EVENT_TYPES

        # Each type's series exists from the start at 0, as core.operations.metrics does for its
        # own.
        for event_type in EVENT_TYPES:
            metrics.EVENTS_RECORDED.labels(type=event_type)
        # The days ahead on /metrics and /status (config imports no app).
        SCRAPE_COLLECTORS.append(PartitionsCollector())
        health.status_check_add("events_partitions", partitions_check)
