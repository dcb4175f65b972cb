"""Journal cursors (DESIGN.md "Event journal"): HMAC-signed with Django signing, bound to
the store and the exact filter set, carrying the position (txid, event id) of the last event
a client has been served."""

import hashlib
import json
from dataclasses import dataclass

from django.core import signing

from config.api.errors import BadRequest, Conflict

CURSOR_SALT = "events.cursor.v1"
CURSOR_MAX_LENGTH = 512
# Where a poller starts: before every event of the store.
START_POSITION = (0, "")


@dataclass(frozen=True)
class JournalPosition:
    txid: int
    event_id: str

    @property
    def is_start(self) -> bool:
        return (self.txid, self.event_id) == START_POSITION


def filters_fingerprint(filters: dict[str, str]) -> str:
    """A short hash of the exact filter set (absent filters are left out)."""
    canonical = json.dumps(sorted(filters.items()), separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:24]


def cursor_encode(*, store_id: int, filters: dict[str, str], position: JournalPosition) -> str:
    payload = {
        "s": store_id,
        "f": filters_fingerprint(filters),
        "t": position.txid,
        "e": position.event_id,
    }
    return signing.dumps(payload, salt=CURSOR_SALT, compress=True)


def cursor_decode(raw: str, *, store_id: int, filters: dict[str, str]) -> JournalPosition:
    """The position of a cursor from this store and filter set.

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
        and type(payload.get("t")) is int
        and isinstance(payload.get("e"), str)
    ):
        raise BadRequest("The cursor is malformed.", param="cursor")
    if payload["s"] != store_id:
        raise Conflict("The cursor belongs to another store.", param="cursor")
    if payload["f"] != filters_fingerprint(filters):
        raise Conflict(
            "The cursor was issued for another filter set; send the same filters "
            "or start without a cursor.",
            param="cursor",
        )
    return JournalPosition(txid=payload["t"], event_id=payload["e"])
