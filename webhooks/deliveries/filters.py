"""Query filters of GET /api/v2/webhook-deliveries (django-filter), the one declaration of
those parameters: DjangoFilterBackend applies them and drf-spectacular derives their schema.
Bad values are a 422 naming the parameter."""

import django_filters
from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field

from core.api.filters import NonEmptyParametersForm
from core.api.pagination import counted_by
from events.registry import EVENT_TYPES
from webhooks.deliveries.selectors import delivery_total
from webhooks.models import WebhookDelivery

EVENT_ID_PATTERN = r"^evt_[0-9A-HJKMNP-TV-Z]{26}$"


# drf-spectacular reads a CharFilter as any string; the override states the pattern (and, as
# it replaces the derived schema, the description).
@extend_schema_field(
    {
        "type": "string",
        "pattern": EVENT_ID_PATTERN,
        "description": "Only deliveries of this event (evt_ and 26 characters).",
    }
)
class EventIdFilter(django_filters.CharFilter):
    """An event id: `evt_` and a 26-character ULID."""

    def __init__(self, **kwargs):
        super().__init__(
            validators=[
                RegexValidator(EVENT_ID_PATTERN, "must be an event id (evt_ and 26 characters)")
            ],
            **kwargs,
        )


class WebhookDeliveryFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(
        choices=WebhookDelivery.STATUSES, help_text="Only deliveries in this status."
    )
    event_type = django_filters.ChoiceFilter(
        choices=[(name, name) for name in sorted(EVENT_TYPES)],
        help_text="Only deliveries of events of this type.",
    )
    event_id = EventIdFilter()

    class Meta:
        model = WebhookDelivery
        fields = ["status", "event_type", "event_id"]
        form = NonEmptyParametersForm

    def filter_queryset(self, queryset):
        if any(self.form.cleaned_data.values()):
            # A filter's total is counted, O(matching rows) (docs/decisions/webhooks.md).
            return super().filter_queryset(queryset)
        # Unfiltered: the store's maintained counter, O(1).
        return counted_by(queryset, delivery_total(store=self.request.store))
