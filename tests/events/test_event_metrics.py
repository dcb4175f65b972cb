"""The journal's counter: every registered type's series exists from the start at 0, so
rate() and alerts see a type's first event (the events app creates them: config imports no
app)."""

from prometheus_client import REGISTRY

from events.registry import EVENT_TYPES


def test_every_registered_type_has_a_series_before_its_first_event():
    for event_type in EVENT_TYPES:
        labels = {"type": event_type}
        assert REGISTRY.get_sample_value("storefront_events_recorded_total", labels) is not None
