"""Cursors are opaque (docs/decisions/hardening.md "7."): a holder reads neither the store id nor
the journal position from one, and a SECRET_KEY rotation keeps them valid while the old key is
in SECRET_KEY_FALLBACKS ("8 (event cursors).")."""

import base64
import binascii
import zlib

import pytest
from django.core import signing

from events.cursors import CURSOR_SALT, filters_fingerprint
from tests.events.helpers import record_committed
from tests.factories import MembershipFactory, StoreFactory, UserFactory, make_api_key

pytestmark = pytest.mark.django_db(transaction=True)

OLD_KEY = "old-secret-key-" + "o" * 50
NEW_KEY = "new-secret-key-" + "n" * 50
# A store id long enough that finding it in a cursor's bytes by chance is out of the question.
DISTINCT_STORE_ID = 918_273_645


def _readable(cursor: str) -> bytes:
    """Everything a holder gets out of a cursor with base64 and zlib, the way Django signs."""
    text = cursor.split(":")[0]
    compressed = text.startswith(".")
    try:
        raw = base64.urlsafe_b64decode(text.lstrip(".") + "=" * (-len(text.lstrip(".")) % 4))
    except (binascii.Error, ValueError):
        return b""
    try:
        return raw + zlib.decompress(raw) if compressed else raw
    except zlib.error:
        return raw


def _longest_common_run(left: bytes, right: bytes) -> int:
    best = 0
    previous = [0] * (len(right) + 1)
    for a in left:
        current = [0] * (len(right) + 1)
        for j, b in enumerate(right, start=1):
            if a == b:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best


def test_consecutive_cursors_reveal_neither_the_store_id_nor_the_position(client_for):
    # given a store with a distinctive id and two events recorded in two transactions
    owner = UserFactory()
    store = StoreFactory(pk=DISTINCT_STORE_ID)
    MembershipFactory(user=owner, store=store)
    client = client_for(make_api_key(owner))
    events = [record_committed(store, subject=("coupon", str(n))) for n in range(2)]
    # when the journal is read one event per page: two consecutive cursors
    first = client.get("/api/v2/events", {"limit": 1}).json()
    second = client.get(
        "/api/v2/events", {"limit": 1, "cursor": first["meta"]["next_cursor"]}
    ).json()
    assert [first["data"][0]["id"], second["data"][0]["id"]] == [e.id for e in events]
    cursors = [first["meta"]["next_cursor"], second["meta"]["next_cursor"]]
    # then neither text nor its decoded bytes hold the store id, a txid or an event id
    secrets = [str(store.pk).encode(), b'"s"']
    for event in events:
        secrets += [str(event.txid).encode(), event.txid.to_bytes(8, "big"), event.id.encode()]
        secrets += [event.txid.to_bytes(8, "little")]
    for cursor in cursors:
        readable = cursor.encode() + _readable(cursor)
        assert [s for s in secrets if s in readable] == [], cursor
    # and the two share no structure: one length, no common run past what chance gives
    assert len(cursors[0]) == len(cursors[1])
    assert _longest_common_run(_readable(cursors[0]), _readable(cursors[1])) < 6


def test_every_cursor_has_the_same_length_whatever_its_position(auth_client, store):
    lengths = {len(auth_client.get("/api/v2/events").json()["meta"]["next_cursor"])}
    for n in range(3):
        record_committed(store, subject=("coupon", str(n)))
        page = auth_client.get("/api/v2/events", {"type": "coupon.created", "limit": 2}).json()
        lengths.add(len(page["meta"]["next_cursor"]))
    assert len(lengths) == 1


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_a_cursor_altered_anywhere_is_400(auth_client, store, where):
    record_committed(store)
    cursor = auth_client.get("/api/v2/events").json()["meta"]["next_cursor"]
    index = {"start": 0, "middle": len(cursor) // 2, "end": len(cursor) - 2}[where]
    altered = cursor[:index] + ("A" if cursor[index] != "A" else "B") + cursor[index + 1 :]
    response = auth_client.get("/api/v2/events", {"cursor": altered})
    assert response.status_code == 400
    assert response.json()["code"] == "bad_request"
    assert response.json()["param"] == "cursor"


def _base64(size: int) -> str:
    return base64.urlsafe_b64encode(bytes(size)).rstrip(b"=").decode()


@pytest.mark.parametrize(
    "raw",
    [
        "A",  # not even a byte
        _base64(12),  # a nonce and nothing else
        _base64(28),  # a nonce and a tag, no text
        _base64(284),  # a cursor's length, all zeros
        "é" * 10,  # not base64 at all
    ],
    ids=["one-char", "nonce-only", "no-text", "zeros", "non-ascii"],
)
def test_a_cursor_that_only_looks_sealed_is_400(auth_client, store, raw):
    response = auth_client.get("/api/v2/events", {"cursor": raw})
    assert response.status_code == 400
    assert response.json()["code"] == "bad_request"
    assert response.json()["param"] == "cursor"


BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


@pytest.mark.parametrize("variant", ["padded", "unused-bits"])
def test_only_the_exact_text_issued_is_accepted(auth_client, store, variant):
    # given a cursor; its base64 has 2 unused bits in its last character (284 bytes)
    record_committed(store)
    cursor = auth_client.get("/api/v2/events").json()["meta"]["next_cursor"]
    last = BASE64URL.index(cursor[-1])
    # when it is sent as a text that decodes to the very same bytes
    same_bytes = {
        "padded": cursor + "=",
        "unused-bits": cursor[:-1] + BASE64URL[last ^ 1],
    }[variant]
    assert base64.urlsafe_b64decode(same_bytes + "=" * (-len(same_bytes) % 4)) == (
        base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    )
    # then it is refused: one cursor, one text (and a one-character change is always a 400)
    response = auth_client.get("/api/v2/events", {"cursor": same_bytes})
    assert response.status_code == 400
    assert response.json()["param"] == "cursor"


def _issued_sealed(client, store):
    """A cursor the API issues, positioned after one event."""
    record_committed(store, subject=("coupon", "seen"))
    return client.get("/api/v2/events").json()["meta"]["next_cursor"]


def _issued_signed(client, store):
    """A cursor in the Django-signed form of before the sealed one, positioned after one event."""
    seen = record_committed(store, subject=("coupon", "seen"))
    payload = {"s": store.pk, "f": filters_fingerprint({}), "p": [seen.txid, seen.id], "m": None}
    return signing.dumps(payload, salt=CURSOR_SALT, compress=True)


@pytest.mark.parametrize("issue", [_issued_sealed, _issued_signed], ids=["sealed", "signed"])
def test_a_cursor_outlives_a_key_rotation_until_the_old_key_leaves_the_fallbacks(
    auth_client, store, settings, issue
):
    # given a cursor issued under the old key, and an event after it
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = OLD_KEY, []
    cursor = issue(auth_client, store)
    new = record_committed(store, subject=("coupon", "new"))
    # when SECRET_KEY is rotated with the old key kept as a fallback
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = NEW_KEY, [OLD_KEY]
    # then the cursor still reads on, and the next one is issued under the new key
    rotated = auth_client.get("/api/v2/events", {"cursor": cursor})
    assert rotated.status_code == 200, rotated.json()
    assert [e["id"] for e in rotated.json()["data"]] == [new.id]
    next_cursor = rotated.json()["meta"]["next_cursor"]
    # when the old key leaves the fallbacks
    settings.SECRET_KEY_FALLBACKS = []
    # then the old cursor is refused as altered, and the one issued after the rotation reads on
    refused = auth_client.get("/api/v2/events", {"cursor": cursor})
    assert refused.status_code == 400
    assert refused.json()["code"] == "bad_request"
    assert refused.json()["param"] == "cursor"
    after = auth_client.get("/api/v2/events", {"cursor": next_cursor})
    assert after.status_code == 200
    assert after.json()["data"] == []


def test_a_cursor_sealed_under_an_unknown_key_is_400(auth_client, store, settings):
    settings.SECRET_KEY = OLD_KEY
    cursor = _issued_sealed(auth_client, store)
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = NEW_KEY, ["another-" + "k" * 50]
    response = auth_client.get("/api/v2/events", {"cursor": cursor})
    assert response.status_code == 400
    assert response.json()["param"] == "cursor"
