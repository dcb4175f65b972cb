"""The one idempotency mechanism (docs/design.md "Idempotency"), through the `idempotent` action
decorator.

A key is scoped to (user, operation); a record holds the request only as a digest of method,
path, store and body, and the response to replay unless it is a 5xx or a 429 (nothing ran, so
a retry must be able to). Values an action declares `withheld` are stored as their SHA-256 and
shown again only while the request or the database can give them back
(docs/decisions/hardening.md "A signing secret shown once is shown again only to its
credential").
"""

import functools
import hashlib
import hmac
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, InterfaceError, OperationalError, connection, transaction
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from core.api.errors import Conflict, ValidationFailed, api_exception_handler, request_id_of
from core.api.models import IdempotencyKey

HEADER = "Idempotency-Key"
# Printable ASCII, as HTTP header values travel reliably; the schema states the same pattern.
KEY_PATTERN_SOURCE = r"^[\x20-\x7e]+$"
KEY_PATTERN = re.compile(KEY_PATTERN_SOURCE)
# The longest key (the column's length).
KEY_MAX_LENGTH = IdempotencyKey._meta.get_field("key").max_length
# A claim left in flight this long belongs to a request that died; it may be taken over.
ABANDONED_AFTER = timedelta(minutes=5)


def idempotency_key_from(request, *, required: bool, min_length: int) -> str | None:
    key = request.headers.get(HEADER)
    # A header sent empty is a key that breaks the length rule, not an absent one (422).
    if key is None:
        if required:
            raise ValidationFailed.field(HEADER, "is required")
        return None
    if not (min_length <= len(key) <= KEY_MAX_LENGTH) or not KEY_PATTERN.fullmatch(key):
        raise ValidationFailed.field(
            HEADER, f"must be {min_length} to {KEY_MAX_LENGTH} printable ASCII characters"
        )
    return key


@dataclass(frozen=True)
class Withheld:
    """A value of the response's `data` object that the stored response holds only as a digest.

    The first response shows it. A replay shows it again when one of `current(request)` (the
    replaying request's own body, the row as it is now) has the stored digest; otherwise it
    shows `kept(value)`, a harmless part kept in clear (a URL's origin), or, when there is no
    such part, the replay is a 409 with `refusal`. With `own_credential`, only the credential
    that made the first request sees it again; another credential of the same user gets that
    409: the value was shown once, to one client.
    """

    name: str
    current: Callable[[object], Iterable[str | None]]
    refusal: str = ""
    kept: Callable[[str], str] | None = None
    own_credential: bool = False


def _digest(value: str) -> str:
    # Unkeyed: withheld values are a 32-byte random secret or a URL a client chose; the digest
    # only has to recognise the value again, and must survive a SECRET_KEY rotation.
    return hashlib.sha256(value.encode()).hexdigest()


def _credential_digest(request) -> str:
    """The credential of the request, stable across an OAuth installation's token refreshes
    (its rate-limit identity: one API key, one CLI installation)."""
    return _digest(request.auth.rate_limit_key if request.auth is not None else "")


def _withheld_for_storage(data, withheld: tuple[Withheld, ...], request):
    """The response body as the record stores it: each withheld value replaced by its digest."""
    resource = data.get("data") if isinstance(data, dict) else None
    if not isinstance(resource, dict):
        return data
    stored = dict(resource)
    for value in withheld:
        if isinstance(stored.get(value.name), str):
            shown = stored[value.name]
            stored[value.name] = {
                "sha256": _digest(shown),
                "kept": value.kept(shown) if value.kept else None,
                "credential": _credential_digest(request) if value.own_credential else None,
            }
    return {**data, "data": stored}


def _withheld_restored(body, withheld: tuple[Withheld, ...], request):
    """The stored body with each withheld value shown again where this request may see it."""
    resource = body.get("data") if isinstance(body, dict) else None
    if not isinstance(resource, dict):
        return body
    restored = dict(resource)
    for value in withheld:
        stored = restored.get(value.name)
        if not isinstance(stored, dict):
            continue
        if stored["credential"] is not None and not hmac.compare_digest(
            stored["credential"], _credential_digest(request)
        ):
            raise Conflict(value.refusal, param=HEADER)
        shown = next(
            (
                candidate
                for candidate in value.current(request)
                if isinstance(candidate, str)
                and hmac.compare_digest(_digest(candidate), stored["sha256"])
            ),
            stored["kept"],
        )
        if shown is None:
            raise Conflict(value.refusal, param=HEADER)
        restored[value.name] = shown
    return {**body, "data": restored}


def _fingerprint(request, store_id) -> str:
    payload = json.dumps(
        [request.method, request.path, store_id, request.data], sort_keys=True, default=str
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def _claim(user, operation: str, key: str, fingerprint: str) -> IdempotencyKey | None:
    """Claims the key; returns None when claimed, else the existing (live) record."""
    now = timezone.now()
    for _ in range(2):
        try:
            with transaction.atomic():
                IdempotencyKey.objects.create(
                    user=user, operation=operation, key=key, fingerprint=fingerprint, created_at=now
                )
            return None
        except IntegrityError:
            existing = IdempotencyKey.objects.filter(
                user=user, operation=operation, key=key
            ).first()
            if existing is None:
                continue  # deleted meanwhile: claim again
            expired = existing.created_at < now - settings.IDEMPOTENCY_KEY_TTL
            abandoned = (
                existing.response_status is None and existing.created_at < now - ABANDONED_AFTER
            )
            if not (expired or abandoned):
                return existing
            IdempotencyKey.objects.filter(pk=existing.pk, created_at=existing.created_at).delete()
    raise Conflict("This Idempotency-Key is being used by a concurrent request.", param=HEADER)


def idempotent_response(
    request,
    *,
    operation: str,
    key: str | None,
    store_id=None,
    run: Callable[[], Response],
    withheld: tuple[Withheld, ...] = (),
) -> Response:
    """Runs `run()` once per (user, operation, key) and replays its outcome afterwards."""
    if key is None:
        return run()
    fingerprint = _fingerprint(request, store_id)
    existing = _claim(request.user, operation, key, fingerprint)
    if existing is not None:
        if existing.fingerprint != fingerprint:
            raise Conflict("This Idempotency-Key was used with a different request.", param=HEADER)
        if existing.response_status is None:
            raise Conflict(
                "A request with this Idempotency-Key is still in progress.", param=HEADER
            )
        body = existing.response_body
        if isinstance(body, dict) and "request_id" in body:
            # A stored error envelope: it names this request, as X-Request-Id does.
            body = {**body, "request_id": request_id_of(request)}
        body = _withheld_restored(body, withheld, request)
        return Response(
            body, status=existing.response_status, headers={"Idempotent-Replayed": "true"}
        )

    claim = IdempotencyKey.objects.filter(user=request.user, operation=operation, key=key)
    try:
        response = run()
    except Exception as error:
        # The same envelope the handler would give; its status decides whether it is stored.
        response = api_exception_handler(error, {"request": request})
    except BaseException:
        claim.delete()
        raise
    if response.status_code >= 500 or response.status_code == 429:
        _settle(claim.delete)
    else:
        stored = _withheld_for_storage(response.data, withheld, request)
        _settle(lambda: claim.update(response_status=response.status_code, response_body=stored))
    return response


def _settle(write: Callable[[], object]) -> None:
    """Records the outcome on the claim (or releases it). When the request's database session
    was lost meanwhile (PostgreSQL restarted, the session was terminated), once more on a new
    one: a claim left in flight would answer every retry of the key with 409 for
    ABANDONED_AFTER (tests/faults/test_postgresql.py)."""
    try:
        write()
    except (OperationalError, InterfaceError):
        if connection.in_atomic_block:
            raise
        connection.close()
        write()


def idempotent(
    *,
    operation: str,
    replayed_statuses: Iterable[int],
    required: bool = False,
    min_length: int = 1,
    withheld: Iterable[Withheld] = (),
):
    """Makes a ViewSet action idempotent under `Idempotency-Key` and declares it in the schema.

    `operation` scopes keys (with the user); the fingerprint includes the resolved store, so a
    key reused against another store is a 409. `replayed_statuses` are the outcomes a replay
    can return (those of the action itself; errors raised before it are never stored).
    `withheld`: the response values the record must not hold (Withheld).
    """
    withheld = tuple(withheld)

    def decorator(action):
        @functools.wraps(action)
        def wrapper(self, request, *args, **kwargs):
            key = idempotency_key_from(request, required=required, min_length=min_length)
            store = getattr(request, "store", None)
            return idempotent_response(
                request,
                operation=operation,
                key=key,
                store_id=store.pk if store is not None else None,
                run=lambda: action(self, request, *args, **kwargs),
                withheld=withheld,
            )

        return extend_schema(
            parameters=[
                idempotency_key_parameter(required=required, min_length=min_length),
                idempotent_replayed_header(replayed_statuses),
            ]
        )(wrapper)

    return decorator


def idempotency_keys_prune() -> int:
    cutoff = timezone.now() - settings.IDEMPOTENCY_KEY_TTL
    deleted, _ = IdempotencyKey.objects.filter(created_at__lt=cutoff).delete()
    return deleted


def idempotent_replayed_header(statuses) -> OpenApiParameter:
    """The response header of a stored outcome replayed under the same Idempotency-Key."""
    return OpenApiParameter(
        "Idempotent-Replayed",
        str,
        OpenApiParameter.HEADER,
        enum=["true"],
        response=sorted(statuses),
        required=False,
        description="`true` when this is the stored response of an earlier request with the "
        "same Idempotency-Key; absent on the first execution.",
    )


def idempotency_key_parameter(*, required: bool, min_length: int):
    """The Idempotency-Key header as `idempotency_key_from` checks it."""
    return OpenApiParameter(
        "Idempotency-Key",
        {
            "type": "string",
            "minLength": min_length,
            "maxLength": KEY_MAX_LENGTH,
            "pattern": KEY_PATTERN_SOURCE,
        },
        OpenApiParameter.HEADER,
        required=required,
        description=f"{min_length} to {KEY_MAX_LENGTH} printable ASCII characters; reuse it only "
        "to retry the identical request (24 hours). A replay answers the stored response "
        "with `Idempotent-Replayed: true`.",
    )
