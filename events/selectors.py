from dataclasses import dataclass

from django.conf import settings

from config.api.errors import CursorExpired
from events.cursors import START_POSITION, JournalPosition
from events.models import Event, EventPruneMark
from events.positions import TransactionHorizon, uses_transaction_horizon


@dataclass(frozen=True)
class JournalPage:
    events: list[Event]
    position: JournalPosition  # after the last event served (or unchanged when none)
    has_more: bool


def journal_page(
    *, store, filters: dict[str, str], position: JournalPosition | None, limit: int, fallback_url
) -> JournalPage:
    """The next `limit` servable events after `position`, oldest first (keyset access).

    Only events below the transaction horizon are served, so a later page can never hold an
    event that sorts before this one (events/positions.py). Raises CursorExpired (410) when
    retention has deleted events after `position`.
    """
    events = Event.objects.filter(store=store, **filters)
    if position is not None and not position.is_start:
        events = events.filter(txid__gte=position.txid).exclude(
            txid=position.txid, id__lte=position.event_id
        )
    if uses_transaction_horizon():
        # The horizon and the rows come from one statement, hence one snapshot.
        events = events.filter(txid__lt=TransactionHorizon())
    rows = list(events.order_by("txid", "id")[: limit + 1])
    if position is not None:
        # Checked after reading: a prune that committed meanwhile is seen here at the latest.
        _refuse_if_pruned_past(store=store, position=position, fallback_url=fallback_url)
    page = rows[:limit]
    if page:
        position = JournalPosition(txid=page[-1].txid, event_id=page[-1].id)
    return JournalPage(
        events=page,
        position=position or JournalPosition(*START_POSITION),
        has_more=len(rows) > limit,
    )


def _refuse_if_pruned_past(*, store, position: JournalPosition, fallback_url: str) -> None:
    mark = EventPruneMark.objects.filter(store=store).first()
    if mark is None or (mark.txid, mark.event_id) <= (position.txid, position.event_id):
        return
    raise CursorExpired(
        f"The cursor points before the {settings.EVENTS_RETENTION_DAYS}-day retention window; "
        "events after it were deleted. Restart from the fallback URL without a cursor.",
        param="cursor",
        extra={"fallback": {"transport": "cursor_polling", "url": fallback_url}},
    )
