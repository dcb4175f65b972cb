from dataclasses import dataclass

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS
from django.db.models import QuerySet

from core.api.errors import CursorExpired
from core.database.replica import ReplicaState, read_preferring_replica
from events.cursors import JournalCursor, JournalPosition
from events.models import Event, EventPruneMark
from events.positions import TransactionHorizon, transaction_horizon_now


@dataclass(frozen=True)
class JournalPage:
    events: list[Event]
    next_cursor: JournalCursor
    has_more: bool


def journal_page(
    *, events: QuerySet[Event], store, cursor: JournalCursor | None, limit: int, fallback_url
) -> JournalPage:
    """The next `limit` servable `events` of the store after the cursor, oldest first (keyset
    access); `events` is the store's journal under the client's filters.

    Only events below the transaction horizon are served, so a later page can never hold an
    event that sorts before this one (events/positions.py). Raises CursorExpired (410) when
    retention deleted, after the cursor was issued, events the cursor had not reached.

    Read from the replica when one is usable and has replayed up to the cursor's position,
    else from the primary (docs/decisions/events.md "Reads from a replica").
    """
    position = cursor.position if cursor else None
    return read_preferring_replica(
        lambda using: _journal_page(
            events=events.using(using),
            using=using,
            store=store,
            cursor=cursor,
            limit=limit,
            fallback_url=fallback_url,
        ),
        serves=lambda replica: _replica_reached(replica, position),
    )


def _replica_reached(replica: ReplicaState, position: JournalPosition | None) -> bool:
    """Whether the replica has replayed all the cursor has seen. One that has not would answer
    an empty page (it serves below its own horizon only, so never a wrong one) while the
    primary may have events for it: the primary answers instead."""
    return position is None or JournalPosition(txid=replica.horizon, event_id="") >= position


def _journal_page(
    *,
    events: QuerySet[Event],
    using: str,
    store,
    cursor: JournalCursor | None,
    limit: int,
    fallback_url,
) -> JournalPage:
    """journal_page on the server `using`; its own horizon bounds what it serves."""
    # Read before the page: every deletion it covers is already invisible to the page.
    mark_before = prune_mark_of(store, using=using)
    # Read before the page too (see transaction_horizon_now): all below it is final by then.
    horizon = transaction_horizon_now(using)
    position = cursor.position if cursor else None
    if position is not None:
        events = events.filter(txid__gte=position.txid)
        if position.event_id:  # "" is a scanned-through position: every id of txid is ahead
            events = events.exclude(txid=position.txid, id__lte=position.event_id)
    # The horizon and the rows come from one statement, hence one snapshot.
    events = events.filter(txid__lt=TransactionHorizon())
    rows = list(events.order_by("txid", "id")[: limit + 1])
    if cursor is not None:
        # Read after the page: a prune that committed meanwhile is seen here at the latest.
        _refuse_if_pruned_past(store=store, cursor=cursor, fallback_url=fallback_url, using=using)
    page = rows[:limit]
    next_position = _next_position(position, page, rows, limit=limit, horizon=horizon)
    return JournalPage(
        events=page,
        next_cursor=(
            cursor.successor(position=next_position, prune_mark=mark_before)
            if cursor is not None
            else JournalCursor(position=next_position, prune_mark=mark_before)
        ),
        has_more=len(rows) > limit,
    )


def _next_position(
    position: JournalPosition | None,
    page: list[Event],
    rows: list[Event],
    *,
    limit: int,
    horizon: int,
) -> JournalPosition | None:
    """How far the client has now seen the journal under its filters: at least the last event
    served, and `(txid, "")` of the first row not served (the (limit+1)-th, else the horizon):
    no matching event with a lower txid is left. This keeps a filtered cursor from expiring
    when retention deletes OTHER events of the store (docs/decisions/events.md "Retention and
    410", its scanned-through positions)."""
    candidates = [position] if position is not None else []
    if page:
        candidates.append(JournalPosition(txid=page[-1].txid, event_id=page[-1].id))
    scanned_to = rows[limit].txid if len(rows) > limit else horizon
    candidates.append(JournalPosition(txid=scanned_to, event_id=""))
    return max(candidates, default=None)


def prune_mark_of(store, *, using: str = DEFAULT_DB_ALIAS) -> JournalPosition | None:
    mark = (
        EventPruneMark.objects.using(using)
        .filter(store=store)
        .values_list("txid", "event_id")
        .first()
    )
    return JournalPosition(*mark) if mark else None


def _refuse_if_pruned_past(*, store, cursor: JournalCursor, fallback_url: str, using: str) -> None:
    """410 when retention deleted an event after the cursor's position since it was issued."""
    mark_now = prune_mark_of(store, using=using)
    # Not moved since the cursor was issued. Marks only move forward, so on the primary this
    # is equality; a replica that has not replayed the prune the cursor saw has an older one.
    if mark_now is None or (cursor.prune_mark is not None and mark_now <= cursor.prune_mark):
        return
    if cursor.position is not None and mark_now <= cursor.position:
        return
    raise CursorExpired(
        f"The cursor points before the {settings.EVENTS_RETENTION_DAYS}-day retention window; "
        "events after it were deleted. Restart from the fallback URL without a cursor.",
        param="cursor",
        extra={"fallback": {"transport": "cursor_polling", "url": fallback_url}},
    )
