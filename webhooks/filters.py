"""Query filters of GET /api/v2/webhook-deliveries (django-filter); bad values -> 422."""

import django_filters
from django.core.validators import RegexValidator

from events.registry import EVENT_TYPES
from webhooks.models import WebhookDelivery

EVENT_ID_PATTERN = r"^evt_[0-9A-HJKMNP-TV-Z]{26}$"


class WebhookDeliveryFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(
        choices=WebhookDelivery.STATUSES, help_text="Only deliveries in this status."
    )
    event_type = django_filters.ChoiceFilter(
        choices=[(name, name) for name in sorted(EVENT_TYPES)],
        help_text="Only deliveries of events of this type.",
    )
    event_id = django_filters.CharFilter(
        max_length=30,
        validators=[
            RegexValidator(EVENT_ID_PATTERN, "must be an event id (evt_ and 26 characters)")
        ],
        help_text="Only deliveries of this event (evt_...).",
    )

    class Meta:
        model = WebhookDelivery
        fields = ["status", "event_type", "event_id"]
