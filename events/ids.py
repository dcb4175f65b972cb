import os
import threading
import time

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_RANDOM_BITS = 80
_lock = threading.Lock()
_last_value = 0


def new_ulid() -> str:
    """A 26-character ULID: 48-bit millisecond time + 80 random bits, Crockford base32.

    Monotonic within a process (the ULID spec's monotonic variant): the journal orders the
    events of one transaction by id, so two events recorded in the same millisecond must
    still sort in the order they were recorded.
    """
    global _last_value
    candidate = (int(time.time() * 1000) << _RANDOM_BITS) | int.from_bytes(os.urandom(10), "big")
    with _lock:
        if candidate <= _last_value:
            candidate = _last_value + 1
        _last_value = candidate
    chars = []
    value = candidate
    for _ in range(26):
        value, index = divmod(value, 32)
        chars.append(_CROCKFORD[index])
    return "".join(reversed(chars))


def new_event_id() -> str:
    return "evt_" + new_ulid()
