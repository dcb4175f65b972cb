from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, viewsets

from core.api.schema import error_responses
from events.filters import EventFilter
from events.models import Event
from events.pagination import JournalPagination
from events.serializers import CursorExpiredSchema, EventSerializer
from stores.access import StorePermission


def journal_schema(
    *, operation_id: str, summary: str, description: str, statuses=(), parameters=()
):
    return extend_schema(
        operation_id=operation_id,
        summary=summary,
        description=description,
        parameters=list(parameters),
        responses={
            200: EventSerializer,
            **error_responses(403, 409, 422, *statuses),
            410: OpenApiResponse(
                CursorExpiredSchema, description="Cursor expired; restart from `fallback.url`."
            ),
        },
    )


class JournalViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """A list of the store's event journal. `JournalPagination` binds its cursor to
    `journal_filters`, the filters the request applies."""

    permission_classes = [StorePermission]
    permission_area = "event"
    queryset = Event.objects.all()
    serializer_class = EventSerializer
    pagination_class = JournalPagination
    filter_backends = [DjangoFilterBackend]
    filterset_class = None

    def get_queryset(self):
        return super().get_queryset().filter(store=self.request.store)

    @property
    def journal_filters(self) -> dict[str, str]:
        """The FilterSet's parameters the request set. DjangoFilterBackend has validated them
        (422 otherwise) before the paginator asks, and the fields do not strip, so the raw
        values are the cleaned ones."""
        names = self.filterset_class.base_filters if self.filterset_class else ()
        params = self.request.query_params
        return {name: params[name] for name in names if name in params}


@extend_schema_view(
    list=journal_schema(
        operation_id="events_list",
        summary="Poll the event journal",
        description="Events of the store, oldest first, for the last 30 days. Follow "
        "`meta.next_cursor`: every committed event is served exactly once.",
    )
)
class EventViewSet(JournalViewSet):
    filterset_class = EventFilter
