"""The identity behind a bearer credential, kept per process while it is current.

An identity is what a credential answers on every request: the credential (API key or OAuth
access token), its user, its abilities and, filled as requests ask, its store memberships
(`Credential.memo`, stores.access). A process keeps it after the database read and reuses it
while its **epochs** are unchanged: two values in Redis, one for the credential (by the hash of
its token) and one for its user, read in the round trip every request already makes for its
rate limit (core.api.ratelimit). Every change that can alter an answer deletes the epoch keys
it concerns (`identity_changed`, on commit), so the next request on every process reads the
database again. docs/decisions/identity.md.

- An identity is trusted only under the epochs read *before* the database read that built it:
  a change committed after that read has deleted them since. The first request of a credential
  on a process reads the database before it knows whose epochs to ask for, so that identity is
  kept unconfirmed (`epochs` None) and the second request reads again; from the third on, none.
- Epochs do not go backwards in effect: they are read with the run id of the Redis server
  that answered (core.api.ratelimit.ServerReached), and an identity is trusted only under the
  same run id. A Redis restarted from an older snapshot, or a replica promoted before it copied
  a deletion, can give back epochs a change has deleted since; either is another server
  process, so every identity kept before is read again, and the database has the change.
- Without Redis (down, or the file cache of `make run`) nothing is reused: every request reads
  the database.
- An expiry is a time, not a change: it is checked on every request from the kept value.
"""

import hashlib
import logging
import secrets
from dataclasses import dataclass
from datetime import datetime

from django.core.cache import cache
from django.db import transaction

from accounts.credentials import Credential
from accounts.models import User
from core.api.ratelimit import EPOCH_SECONDS

logger = logging.getLogger(__name__)

# Identities a process keeps; emptied past this many (a bound, not a policy: keeping one costs
# a database read on the next request).
MAX_IDENTITIES = 10_000


def bearer_token_hash(token: str) -> str:
    """How a bearer token is looked up: its SHA-256 (ApiKey.key_hash; DOT's token_checksum)."""
    return hashlib.sha256(token.encode()).hexdigest()


def credential_epoch_key(token_hash: str) -> str:
    return f"identity:credential:{token_hash}"


def user_epoch_key(user_id: int) -> str:
    return f"identity:user:{user_id}"


@dataclass
class Identity:
    user: User
    credential: Credential
    token_hash: str
    expires_at: datetime | None
    # The epochs this identity was read under; None: not confirmed (read before them).
    epochs: tuple[str, ...] | None = None
    # API keys: when the key's `last_used_at` was last written (accounts/authentication.py).
    last_used_at: datetime | None = None
    epoch_keys: tuple[str, str] = ()

    def __post_init__(self):
        self.epoch_keys = credential_epoch_key(self.token_hash), user_epoch_key(self.user.pk)

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


_identities: dict[str, Identity] = {}


def identity_kept(token_hash: str) -> Identity | None:
    return _identities.get(token_hash)


def identity_keep(identity: Identity) -> None:
    if len(_identities) >= MAX_IDENTITIES:
        _identities.clear()
    _identities[identity.token_hash] = identity


def identity_forget(token_hash: str) -> None:
    """Drops the process's identity of a credential that no longer authenticates, and its
    credential epoch, which tells an over-budget address's request that the credential is worth
    a database read (accounts/authentication.py)."""
    if _identities.pop(token_hash, None) is not None:
        _delete_epochs([credential_epoch_key(token_hash)])


def identity_changed(*, token_hashes=(), user_ids=()) -> None:
    """Every process reads the identities of these credentials and users again on its next
    request: their epochs are deleted when the transaction commits (and at once, so that this
    transaction's own next reads, and a test's, whose transaction never commits, see the
    change; the deletion after the commit is the one other processes rely on, as one before it
    could let them read the old rows again under a new epoch)."""
    keys = [*map(credential_epoch_key, token_hashes), *map(user_epoch_key, user_ids)]
    if not keys:
        return
    if transaction.get_connection().in_atomic_block:
        _delete_epochs(keys)
    transaction.on_commit(lambda: _delete_epochs(keys))


def credential_known(token_hash: str) -> None:
    """A new credential: its epoch is made now, so that an over-budget address's request with
    it is worth a database read before any request authenticated it (failures alone are refused). An
    integer, as the rate-limit script reads the raw value (Django's Redis cache stores integers
    as they are)."""
    try:
        cache.add(credential_epoch_key(token_hash), secrets.randbits(62), EPOCH_SECONDS)
    except Exception:
        logger.warning("could not record a new credential's epoch", exc_info=True)


def _delete_epochs(keys: list[str]) -> None:
    try:
        cache.delete_many(keys)
    except Exception:
        # Processes that kept these identities may keep them until their epochs expire
        # (core.api.ratelimit.EPOCH_SECONDS, an hour): said loudly, an operator must know.
        logger.error("could not advance identity epochs %s", keys, exc_info=True)


# What advances epochs: every write of a row an identity is read from, whichever code makes it
# (services, the admin, DOT's revocation and rotation, a shell). Receivers see each save and
# delete, also of rows a cascade deletes; `QuerySet.update()` sends no signal, so the services
# that update such rows call identity_changed themselves (accounts.services.api_key_revoke).
# Stores' rows (memberships, stores) have theirs in stores/services.py.


def _user_saved(sender, instance, update_fields=None, **kwargs):
    # A sign-in writes last_login only: no answer of the API depends on it.
    if update_fields is None or set(update_fields) != {"last_login"}:
        identity_changed(user_ids=[instance.pk])


def _user_deleted(sender, instance, **kwargs):
    identity_changed(user_ids=[instance.pk])


def _api_key_saved(sender, instance, created, **kwargs):
    if created:
        credential_known(instance.key_hash)
    else:
        identity_changed(token_hashes=[instance.key_hash])


def _api_key_deleted(sender, instance, **kwargs):
    identity_changed(token_hashes=[instance.key_hash])


def _api_key_stores_changed(sender, instance, action, **kwargs):
    if action in {"post_add", "post_remove", "post_clear"}:
        identity_changed(token_hashes=[instance.key_hash])


def _access_token_saved(sender, instance, created, **kwargs):
    if created:
        credential_known(instance.token_checksum)
    else:
        identity_changed(token_hashes=[instance.token_checksum])


def _access_token_deleted(sender, instance, **kwargs):
    identity_changed(token_hashes=[instance.token_checksum])


def connect_receivers() -> None:
    """Called by AccountsConfig.ready (DOT's model is known only once the apps are loaded)."""
    from django.db.models.signals import m2m_changed, post_delete, post_save
    from oauth2_provider.models import get_access_token_model

    from accounts.models import ApiKey

    post_save.connect(_user_saved, sender=User, dispatch_uid="identity_user_saved")
    post_delete.connect(_user_deleted, sender=User, dispatch_uid="identity_user_deleted")
    post_save.connect(_api_key_saved, sender=ApiKey, dispatch_uid="identity_key_saved")
    post_delete.connect(_api_key_deleted, sender=ApiKey, dispatch_uid="identity_key_deleted")
    access_token = get_access_token_model()
    post_save.connect(_access_token_saved, sender=access_token, dispatch_uid="identity_at_saved")
    post_delete.connect(
        _access_token_deleted, sender=access_token, dispatch_uid="identity_at_deleted"
    )
    m2m_changed.connect(
        _api_key_stores_changed, sender=ApiKey.stores.through, dispatch_uid="identity_key_stores"
    )
