from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, viewsets

from config.api.schema import STORE_HEADER_PARAMETER, error_responses
from events.filters import EventFilter, JournalFilterBackend
from events.models import Event
from events.pagination import JournalPagination
from events.selectors import journal_events, order_journal_filters
from events.serializers import CursorExpiredSchema, EventSerializer
from stores.access import StorePermission

# The router's pattern alone would make it a string of digits.
ORDER_PATH_PARAMETER = OpenApiParameter("order", int, OpenApiParameter.PATH)


def journal_schema(
    *, operation_id: str, summary: str, description: str, statuses=(), parameters=()
):
    return extend_schema(
        operation_id=operation_id,
        summary=summary,
        description=description,
        parameters=[STORE_HEADER_PARAMETER, *parameters],
        responses={
            200: EventSerializer,
            **error_responses(403, 409, 422, *statuses),
            410: OpenApiResponse(
                CursorExpiredSchema, description="Cursor expired; restart from `fallback.url`."
            ),
        },
    )


class JournalViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """A list of the store's event journal; `journal_filters` are the filters it applies, to
    which `JournalPagination` binds the cursor."""

    permission_classes = [StorePermission]
    permission_area = "event"
    queryset = Event.objects.none()  # the model, for the schema; get_queryset scopes it
    serializer_class = EventSerializer
    pagination_class = JournalPagination


@extend_schema_view(
    list=journal_schema(
        operation_id="events_list",
        summary="Poll the event journal",
        description="Events of the store, oldest first, for the last 30 days. Follow "
        "`meta.next_cursor`: every committed event is served exactly once.",
    )
)
class EventViewSet(JournalViewSet):
    filter_backends = [JournalFilterBackend]
    filterset_class = EventFilter

    def get_queryset(self):
        return journal_events(store=self.request.store)


@extend_schema_view(
    list=journal_schema(
        operation_id="order_events_list",
        summary="Poll the events of one order",
        description="The event journal restricted to one order of the store (404 for an "
        "unknown order or another store's).",
        statuses=[404],
        parameters=[ORDER_PATH_PARAMETER],
    )
)
class OrderEventViewSet(JournalViewSet):
    def get_queryset(self):
        self.journal_filters = order_journal_filters(
            store=self.request.store, order_id=int(self.kwargs["order"])
        )
        return journal_events(store=self.request.store).filter(**self.journal_filters)
