"""The journal's cursor pagination (docs/design.md "Event journal"): `cursor` and `limit` in,
`{data, meta: {next_cursor, has_more, retention_days}}` out.

Keyset pages over `(txid, id)` (events/selectors.py `journal_page`), with an opaque cursor bound
to the store and the exact filter set the view applied (`view.journal_filters`).
"""

from urllib.parse import urlencode

from django.conf import settings
from rest_framework.pagination import BasePagination
from rest_framework.response import Response

from core.api.pagination import limit_parameter, object_schema, parse_int_param, query_parameter
from events.cursors import CURSOR_MAX_LENGTH, cursor_decode, cursor_encode
from events.selectors import journal_page


class JournalPagination(BasePagination):
    default_limit = 50
    max_limit = 100

    def paginate_queryset(self, queryset, request, view=None):
        limit = parse_int_param(
            request, "limit", default=self.default_limit, minimum=1, maximum=self.max_limit
        )
        store, filters = request.store, view.journal_filters
        raw_cursor = request.query_params.get("cursor")
        # An empty `cursor=` starts at the oldest retained event, like an absent one.
        cursor = (
            cursor_decode(raw_cursor, store_id=store.pk, filters=filters) if raw_cursor else None
        )
        page = journal_page(
            events=queryset,
            store=store,
            cursor=cursor,
            limit=limit,
            fallback_url=_restart_url(request),
        )
        self.next_cursor = cursor_encode(
            store_id=store.pk, filters=filters, cursor=page.next_cursor
        )
        self.has_more = page.has_more
        return page.events

    def get_paginated_response(self, data):
        return Response(
            {
                "data": data,
                "meta": {
                    "next_cursor": self.next_cursor,
                    "has_more": self.has_more,
                    "retention_days": settings.EVENTS_RETENTION_DAYS,
                },
            }
        )

    def get_paginated_response_schema(self, schema):
        meta = object_schema(
            next_cursor={
                "type": "string",
                "maxLength": CURSOR_MAX_LENGTH,
                "description": "Send as `cursor` to get the events after this page. Present on "
                "every page, empty ones included, and never equal to the request's `cursor`.",
                # drf-spectacular builds the list's example from these examples; a real cursor's
                # length (every cursor has it, events/cursors.py).
                "example": (
                    "-q9l8-RJdqT795q6ryjLLk0gDelHZTv8XJdRFUQ6cdXa_M5gfwFB3vFg7Z_qYlvHN0Vwa0sltIqt"
                    "68Ynghl9KvFhiyO3vydlNPyBaF_W3Q_UHuFlUdsuxKY6I01dvMmw9ZYlaqPQFePfes5w7g5tLES6"
                    "d-xhal8yTyM1KkVERU5AnFbsBp0JlI111Dp1H2j_fo1MdzO41DpHs_dKZ5s4S05RQrILoUKoxnrp"
                    "4nWFNb53G27N5oszta0M8zCVGqh6WPfao1qif5Ipt7A-4-tasJZJ_pDbADFtp8rFckLsd0yEpZFc"
                    "s_j7OAwvaqpwX-CEsuR73pL-1tXH3FjZmvqIWbJlzb6qy0aIPK7lQfyxPBY9Vr0WVtY4FfigYOg"
                ),
            },
            has_more={
                "type": "boolean",
                "description": "Whether another page is ready now.",
                "example": False,
            },
            retention_days={"type": "integer", "example": 30},
        )
        return object_schema(data=schema, meta=meta)

    def get_schema_operation_parameters(self, view):
        return [
            query_parameter(
                "cursor",
                {"type": "string", "maxLength": CURSOR_MAX_LENGTH},
                "`meta.next_cursor` of the previous page; omit to start at the oldest retained "
                "event. Bound to the store and the exact filter set (400 if altered, 409 if "
                "reused elsewhere, 410 if retention deleted events after it).",
            ),
            limit_parameter(self, "Events"),
        ]


def _restart_url(request) -> str:
    """The same list without the cursor: where a client whose cursor expired starts again."""
    params = request.query_params.copy()
    params.pop("cursor", None)
    query = urlencode(sorted(params.lists()), doseq=True)
    return f"{settings.BASE_URL}{request.path}" + (f"?{query}" if query else "")
