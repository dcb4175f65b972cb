import re
from urllib.parse import urlencode

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.errors import ValidationFailed
from config.api.pagination import parse_int_param
from config.api.schema import STORE_HEADER_PARAMETER, error_responses
from events.cursors import cursor_decode, cursor_encode
from events.registry import EVENT_TYPES, SUBJECT_TYPES
from events.selectors import journal_page
from events.serializers import CursorExpiredSchema, EventListSchema, event_resource
from orders.selectors import order_get
from stores.access import StorePermission

DEFAULT_LIMIT, MAX_LIMIT = 50, 100
TYPE_MAX_LENGTH, SUBJECT_ID_MAX_LENGTH = 120, 100
# Subject ids are ours (stringified primary keys); the schema states the same pattern.
SUBJECT_ID_PATTERN = rf"^[A-Za-z0-9_.:-]{{1,{SUBJECT_ID_MAX_LENGTH}}}$"
SUBJECT_ID_RULE = f"must be 1 to {SUBJECT_ID_MAX_LENGTH} characters of A-Z, a-z, 0-9, '_.:-'"

CURSOR_PARAMETER = OpenApiParameter(
    "cursor",
    {"type": "string", "maxLength": 512},
    description="`meta.next_cursor` of the previous page; omit to start at the oldest retained "
    "event. Bound to the store and the exact filter set (400 if altered, 409 if reused "
    "elsewhere, 410 if retention deleted events after it).",
)
LIMIT_PARAMETER = OpenApiParameter(
    "limit",
    {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
    description="Events per page, 1 to 100 (default 50); otherwise 422.",
)
FILTER_PARAMETERS = [
    OpenApiParameter(
        "type",
        {"type": "string", "maxLength": TYPE_MAX_LENGTH, "enum": sorted(EVENT_TYPES)},
        description="Only events of this registered type (at most 120 characters).",
    ),
    OpenApiParameter(
        "subject_type",
        {"type": "string", "enum": sorted(SUBJECT_TYPES)},
        description="Only events about this kind of subject.",
    ),
    OpenApiParameter(
        "subject_id",
        {
            "type": "string",
            "minLength": 1,
            "maxLength": SUBJECT_ID_MAX_LENGTH,
            "pattern": SUBJECT_ID_PATTERN,
        },
        description="Only events about this subject id (1 to 100 of A-Z, a-z, 0-9, _ . : -).",
    ),
]


def journal_responses(*statuses: int) -> dict:
    return {
        200: EventListSchema,
        **error_responses(403, 409, 422, *statuses),
        410: OpenApiResponse(
            CursorExpiredSchema, description="Cursor expired; restart from `fallback.url`."
        ),
    }


def event_filters_from(request) -> dict[str, str]:
    """The journal filters of the query (DESIGN.md: over-long or unknown values -> 422)."""
    params = request.query_params
    filters, errors = {}, {}
    # An empty value is no filter the client can mean (filtering on nothing, or not at all?).
    for name in ("type", "subject_type", "subject_id"):
        if params.get(name) == "":
            errors[name] = ["must not be empty; omit the parameter to leave it out"]
    event_type = params.get("type")
    if event_type:
        if len(event_type) > TYPE_MAX_LENGTH:
            errors["type"] = [f"must be at most {TYPE_MAX_LENGTH} characters"]
        elif event_type not in EVENT_TYPES:
            errors["type"] = [f"must be one of {', '.join(sorted(EVENT_TYPES))}"]
        else:
            filters["type"] = event_type
    subject_type = params.get("subject_type")
    if subject_type:
        if subject_type not in SUBJECT_TYPES:
            errors["subject_type"] = [f"must be one of {', '.join(sorted(SUBJECT_TYPES))}"]
        else:
            filters["subject_type"] = subject_type
    subject_id = params.get("subject_id")
    if subject_id:
        if not re.fullmatch(SUBJECT_ID_PATTERN, subject_id):
            errors["subject_id"] = [SUBJECT_ID_RULE]
        else:
            filters["subject_id"] = subject_id
    if errors:
        raise ValidationFailed(errors)
    return filters


def journal_response(request, filters: dict[str, str]) -> Response:
    """One page of the store's journal under `filters`, with the cursor to the next one."""
    limit = parse_int_param(request, "limit", default=DEFAULT_LIMIT, minimum=1, maximum=MAX_LIMIT)
    raw_cursor = request.query_params.get("cursor")
    cursor = None
    if raw_cursor:
        cursor = cursor_decode(raw_cursor, store_id=request.store.pk, filters=filters)
    page = journal_page(
        store=request.store,
        filters=filters,
        cursor=cursor,
        limit=limit,
        fallback_url=_restart_url(request),
    )
    next_cursor = cursor_encode(store_id=request.store.pk, filters=filters, cursor=page.next_cursor)
    return Response(
        {
            "data": [event_resource(event) for event in page.events],
            "meta": {
                "next_cursor": next_cursor,
                "has_more": page.has_more,
                "retention_days": settings.EVENTS_RETENTION_DAYS,
            },
        }
    )


def _restart_url(request) -> str:
    """The same list without the cursor: where a client whose cursor expired starts again."""
    params = request.query_params.copy()
    params.pop("cursor", None)
    query = urlencode(sorted(params.lists()), doseq=True)
    return f"{settings.BASE_URL}{request.path}" + (f"?{query}" if query else "")


class EventListView(APIView):
    permission_classes = [StorePermission]
    permission_area = "event"

    @extend_schema(
        operation_id="events_list",
        summary="Poll the event journal",
        description="Events of the store, oldest first, for the last 30 days. Follow "
        "`meta.next_cursor`: every committed event is served exactly once.",
        parameters=[STORE_HEADER_PARAMETER, CURSOR_PARAMETER, LIMIT_PARAMETER, *FILTER_PARAMETERS],
        responses=journal_responses(),
    )
    def get(self, request):
        return journal_response(request, event_filters_from(request))


class OrderEventListView(APIView):
    permission_classes = [StorePermission]
    permission_area = "event"

    @extend_schema(
        operation_id="order_events_list",
        summary="Poll the events of one order",
        description="The event journal restricted to one order of the store (404 for an "
        "unknown order or another store's).",
        parameters=[STORE_HEADER_PARAMETER, CURSOR_PARAMETER, LIMIT_PARAMETER],
        responses=journal_responses(404),
    )
    def get(self, request, order: int):
        order = order_get(store=request.store, order_id=order)
        return journal_response(request, {"subject_type": "order", "subject_id": str(order.pk)})
