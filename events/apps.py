from django.apps import AppConfig


class EventsConfig(AppConfig):
    name = "events"

    def ready(self):
        from config import metrics
        from events.registry import EVENT_TYPES

        # Each type's series exists from the start at 0, as config.metrics does for its own.
        for event_type in EVENT_TYPES:
            metrics.EVENTS_RECORDED.labels(type=event_type)
