import hashlib
from datetime import timedelta

API_KEY_PREFIX = "sf_"
# last_used_at is refreshed at most this often, to keep writes off the hot path.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def api_key_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
