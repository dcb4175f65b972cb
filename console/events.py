"""The event journal, newest first, filtered by type (with the trailing `*` wildcard) and
subject with the API's own FilterSet; each event as the API renders it."""

from urllib.parse import urlencode

from console.pages import console_view, render_page
from console.paging import keyset_page
from core.api.errors import NotFound, ValidationFailed
from events.filters import EventFilter
from events.models import Event
from events.registry import EVENT_TYPES, SUBJECT_TYPES
from events.serializers import EventSerializer

READ = "event:read"
FILTERS = ("type", "subject_type", "subject_id")


def _position(token: str) -> tuple[int, str] | None:
    """`<txid>~<event id>` of the "older" link; anything else starts from the newest."""
    txid, _, event_id = token.partition("~")
    return (int(txid), event_id) if txid.isdigit() and event_id else None


@console_view(permission=READ)
def events(request):
    chosen = {n: request.GET[n] for n in FILTERS if request.GET.get(n)}
    journal = Event.objects.filter(store=request.console.store)
    filters = EventFilter(data=chosen, queryset=journal)
    error = None
    rows, older = [], None
    if filters.is_valid():
        # The journal's own position (txid, id), read backwards on its indexes.
        after = _position(request.GET.get("before", ""))
        rows, older = keyset_page(filters.qs, order=("txid", "id"), after=after)
    else:
        error = ValidationFailed({n: [str(m) for m in ms] for n, ms in filters.errors.items()})
    context = {
        "section": "events",
        "events": EventSerializer(rows, many=True).data,
        "older": f"{older[0]}~{older[1]}" if older else None,
        "query": chosen,
        "query_string": urlencode(chosen),
        "event_types": sorted(EVENT_TYPES),
        "subject_types": sorted(SUBJECT_TYPES),
    }
    return render_page(request, "console/events.html", context, error=error)


@console_view(permission=READ)
def event(request, event_id: str):
    found = Event.objects.filter(store=request.console.store, pk=event_id[:30]).first()
    if found is None:
        raise NotFound()
    context = {"section": "events", "event": EventSerializer(found).data}
    return render_page(request, "console/event.html", context)
