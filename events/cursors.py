"""Journal cursors: opaque, bound to the store and the exact filter set (docs/decisions/events.md
"Cursors", docs/decisions/hardening.md "Opaque event cursors" and "SECRET_KEY rotation keeps
cursors").

A cursor carries the position up to which the client has seen every matching event (the last
event served, or `(txid, "")` when the page scanned through), the store's prune mark when it was
issued (what tells a 410 apart) and its place in the chain (`sequence`): the next cursor is
numbered one more, so it never equals the one asked with, which generated clients would refuse
as a cycle. It is sealed with AES-GCM-SIV under a key derived from SECRET_KEY (opened with the
fallbacks too) and padded to one length, so it tells nothing. Django-signed cursors from before
are read, never issued.
"""

import base64
import binascii
import functools
import hashlib
import json
import os
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCMSIV
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.core import signing
from django.utils.encoding import force_bytes

from core.api.errors import BadRequest, Conflict

# What the key is derived for: another use of SECRET_KEY never shares this key.
CURSOR_KEY_INFO = b"storefront events.cursor v2"
# Django-signed cursors (before the sealed form): read only.
CURSOR_SALT = "events.cursor.v1"
CURSOR_MAX_LENGTH = 512
_NONCE_BYTES = 12
# Plaintexts are padded to a multiple of this: every cursor of a real journal has one length.
_PADDED_BYTES = 256


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
        """The cursor a page answers this one with: never equal to it (`sequence`)."""
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
    return cursor_seal(payload)


def cursor_decode(raw: str, *, store_id: int, filters: dict[str, str]) -> JournalCursor:
    """The cursor, if it is ours and from this store and filter set.

    Malformed or tampered -> 400; ours but for another store or filter set -> 409.
    """
    if len(raw) > CURSOR_MAX_LENGTH:
        raise BadRequest("The cursor is malformed.", param="cursor")
    payload = _signed_payload(raw) if ":" in raw else _sealed_payload(raw)
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


def cursor_seal(payload: dict) -> str:
    """`payload` encrypted and authenticated under SECRET_KEY, as URL-safe base64.

    A random nonce per cursor; AES-GCM-SIV rather than AES-GCM because a platform's polls
    issue billions of cursors under one key, past the 2**32 random nonces GCM allows, and
    GCM-SIV survives a repeated nonce (it then reveals only that two plaintexts are equal).
    """
    plaintext = json.dumps(payload, separators=(",", ":")).encode()
    plaintext += b" " * (-len(plaintext) % _PADDED_BYTES)  # JSON ignores trailing blanks
    nonce = os.urandom(_NONCE_BYTES)
    return _text(nonce + _cipher(settings.SECRET_KEY).encrypt(nonce, plaintext, None))


def _text(sealed: bytes) -> str:
    return base64.urlsafe_b64encode(sealed).rstrip(b"=").decode("ascii")


def _sealed_payload(raw: str):
    malformed = BadRequest("The cursor is malformed or was altered.", param="cursor")
    try:
        sealed = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
    except (binascii.Error, ValueError):
        raise malformed from None
    # Only the exact text we issued: the decoder skips stray characters and unused last bits.
    if _text(sealed) != raw:
        raise malformed
    nonce, ciphertext = sealed[:_NONCE_BYTES], sealed[_NONCE_BYTES:]
    if len(nonce) < _NONCE_BYTES:
        raise malformed
    for secret in [settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS]:
        try:
            plaintext = _cipher(secret).decrypt(nonce, ciphertext, None)
        except InvalidTag:  # altered, or sealed under another key
            continue
        try:
            return json.loads(plaintext)
        except ValueError:
            raise malformed from None
    raise malformed


def _signed_payload(raw: str):
    """A cursor from before the sealed form; Django's signing also tries the fallbacks."""
    try:
        return signing.loads(raw, salt=CURSOR_SALT)
    except (signing.BadSignature, ValueError, UnicodeDecodeError):
        raise BadRequest("The cursor is malformed or was altered.", param="cursor") from None


@functools.lru_cache(maxsize=8)
def _cipher(secret: str | bytes) -> AESGCMSIV:
    """The cursor cipher of one secret (HKDF-SHA256, RFC 5869), derived once per process."""
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=CURSOR_KEY_INFO).derive(
        force_bytes(secret)  # Django accepts str or bytes keys
    )
    return AESGCMSIV(key)
