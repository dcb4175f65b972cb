"""The one idempotency mechanism (docs/design.md "Idempotency"): store creation, replay, coupon
writes and webhook destination writes, each through the `idempotent` action decorator.

A key is scoped to (user, operation). The first request claims the key with a fingerprint of
method, path, store and body; its outcome is stored unless it is a 5xx or a 429 (nothing was
executed, so a retry must be able to run). Same key + same request -> the stored response with
`Idempotent-Replayed: true`; a different request -> 409; still in flight -> 409.
"""

import functools
import hashlib
import json
import re
from collections.abc import Callable, Iterable
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, InterfaceError, OperationalError, connection, transaction
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from config.api.errors import Conflict, ValidationFailed, api_exception_handler, request_id_of
from config.api.models import IdempotencyKey

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
    request, *, operation: str, key: str | None, store_id=None, run: Callable[[], Response]
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
        _settle(
            lambda: claim.update(response_status=response.status_code, response_body=response.data)
        )
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
):
    """Makes a ViewSet action idempotent under `Idempotency-Key` and declares it in the schema.

    `operation` scopes keys (with the user); the fingerprint includes the resolved store, so a
    key reused against another store is a 409. `replayed_statuses` are the outcomes a replay
    can return (those of the action itself; errors raised before it are never stored).
    """

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
