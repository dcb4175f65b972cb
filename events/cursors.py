"""Journal cursors (docs/design.md "Event journal"): HMAC-signed with Django signing, bound to
the store and the exact filter set.

A cursor carries the position (txid, event id) up to which the client has seen every event
matching its filters (none yet: the start) and the store's prune mark as it was when the
cursor was issued, which is what tells a cursor that retention has since deleted events it
had not reached (410) from one that merely started after older events were gone.

The position is the last event served, or `(txid, "")` when the page proved that no matching
event with a lower txid is left to serve (events/selectors.py `_next_position`). The empty id
sorts before every real id, so both forms share one encoding, and cursors issued before the
scanned-through form existed decode unchanged.

A cursor also carries its place in the chain of cursors that led to it (`sequence`): the
cursor a page answers with is numbered one more than the cursor it was asked with, so it never
equals it, also when the position did not move (an idle journal). Generated API clients refuse
a `next_cursor` equal to the cursor they sent (cycle detection). The sequence is not part of
the position: two cursors of one position serve the same events.
"""

import hashlib
import json
from dataclasses import dataclass

from django.core import signing

from config.api.errors import BadRequest, Conflict

CURSOR_SALT = "events.cursor.v1"
CURSOR_MAX_LENGTH = 512


@dataclass(frozen=True, order=True)
class JournalPosition:
    txid: int
    event_id: str


@dataclass(frozen=True)
class JournalCursor:
    position: JournalPosition | None  # None: before every event of the store
    prune_mark: JournalPosition | None  # the store's prune mark when issued
    sequence: int = 0  # cursors before this one in its chain; absent in older cursors

    def successor(
        self, *, position: JournalPosition | None, prune_mark: JournalPosition | None
    ) -> "JournalCursor":
        """The cursor a page answers this one with: never equal to it (module docstring)."""
        return JournalCursor(position=position, prune_mark=prune_mark, sequence=self.sequence + 1)


def filters_fingerprint(filters: dict[str, str]) -> str:
    """A short hash of the exact filter set (absent filters are left out)."""
    canonical = json.dumps(sorted(filters.items()), separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:24]


def _pair(position: JournalPosition | None):
    return None if position is None else [position.txid, position.event_id]


def _position(value) -> JournalPosition | None:
    if value is None:
        return None
    if (
        isinstance(value, list)
        and len(value) == 2
        and type(value[0]) is int
        and isinstance(value[1], str)
    ):
        return JournalPosition(txid=value[0], event_id=value[1])
    raise BadRequest("The cursor is malformed.", param="cursor")


def cursor_encode(*, store_id: int, filters: dict[str, str], cursor: JournalCursor) -> str:
    payload = {
        "s": store_id,
        "f": filters_fingerprint(filters),
        "p": _pair(cursor.position),
        "m": _pair(cursor.prune_mark),
        "n": cursor.sequence,
    }
    return signing.dumps(payload, salt=CURSOR_SALT, compress=True)


def cursor_decode(raw: str, *, store_id: int, filters: dict[str, str]) -> JournalCursor:
    """The cursor, if it is ours and from this store and filter set.

    Malformed or tampered -> 400; signed by us but for another store or filter set -> 409.
    """
    if len(raw) > CURSOR_MAX_LENGTH:
        raise BadRequest("The cursor is malformed.", param="cursor")
    try:
        payload = signing.loads(raw, salt=CURSOR_SALT)
    except (signing.BadSignature, ValueError, UnicodeDecodeError):
        raise BadRequest("The cursor is malformed or was altered.", param="cursor") from None
    if not (
        isinstance(payload, dict)
        and type(payload.get("s")) is int
        and isinstance(payload.get("f"), str)
        and type(payload.get("n", 0)) is int
        and payload.get("n", 0) >= 0
    ):
        raise BadRequest("The cursor is malformed.", param="cursor")
    cursor = JournalCursor(
        position=_position(payload.get("p")),
        prune_mark=_position(payload.get("m")),
        sequence=payload.get("n", 0),
    )
    if payload["s"] != store_id:
        raise Conflict("The cursor belongs to another store.", param="cursor")
    if payload["f"] != filters_fingerprint(filters):
        raise Conflict(
            "The cursor was issued for another filter set; send the same filters "
            "or start without a cursor.",
            param="cursor",
        )
    return cursor
