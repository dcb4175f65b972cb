"""TODO docstring."""

from datetime import UTC, datetime
from email.utils import format_datetime

from django.db import transaction
from django.utils import timezone
from drf_spectacular.utils import (
    OpenApiExample,
    extend_schema,
)
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from core.api.errors import NotFound
from core.api.fields import StrictBooleanField
from core.api.idempotency import Withheld, idempotent
from core.api.schema import data_envelope, error_responses, response_example
from core.api.serializers import ClosedObjectSerializer
from events.registry import EVENT_TYPES
from stores.access import resolve_store_context
from stores.models import Store
from webhooks.channels.serializers import (
    ChannelUrlField,
    ChannelUrlReadField,
    EventTypeListField,
)
from webhooks.channels.services import (
    channel_room_check,
    secret_new,
    signing_secret_rotate,
    signing_secret_set,
)
from webhooks.deliveries.views import WebhookAreaMixin
from webhooks.dispatch.failures import pending_deliveries_settle
from webhooks.dispatch.sender import signing_secrets
from webhooks.models import (
    WebhookChannel,
    WebhookSendSlot,
    WebhookSigningSecret,
    url_origin,
)


def destination_put(
    *, store, url: str, event_types: list[str], enabled: bool = True
) -> tuple[WebhookChannel, bool]:
    """Creates or replaces the store's destination; returns (destination, created).

    `url` and `event_types` as webhooks.serializers.WebhookDestinationPutSerializer validates
    them (the SSRF check of the URL, registered types sorted without duplicates).
    """
    now = timezone.now()
    with transaction.atomic():
        # Serialises the store's PUTs: with no destination yet, locking it would lock nothing
        # and two first PUTs would both insert. NO KEY: rows referencing the store still insert.
        Store.objects.select_for_update(no_key=True).only("id").get(pk=store.pk)
        destination = (
            WebhookChannel.objects.select_for_update(no_key=True)
            .filter(store=store)
            .order_by("id")
            .first()
        )
        created = destination is None
        if created:
            channel_room_check(store=store)
            destination = WebhookChannel(store=store, created_at=now)
            # The alias shows the secret it creates the destination with (201): a new one,
            # not one set through the channels, which is never shown.
            signing_secret_set(store=store, secret=secret_new())
        elif (enabled and not destination.enabled) or url != destination.url:
            # A new URL starts its own failure clock; so does a re-enabled destination.
            destination.failing_since = None
        destination.url = url
        destination.event_types = event_types
        destination.enabled = enabled
        destination.disabled_reason = "" if enabled else WebhookChannel.DISABLED_BY_USER
        destination.updated_at = now
        destination.save()
        if not enabled:
            pending_deliveries_settle(channel_id=destination.pk, now=now)
    return destination, created


def destination_delete(*, store) -> None:
    with transaction.atomic():
        destination = destination_get(store=store)
        pending_deliveries_settle(channel_id=destination.pk, now=timezone.now())
        # Its send slots (a send still holding one just finds nothing to give back).
        WebhookSendSlot.objects.filter(
            scope=WebhookSendSlot.SCOPE_CHANNEL, owner=destination.pk
        ).delete()
        destination.delete()


def destination_get(*, store) -> WebhookChannel:
    """The /api/v2/webhook-destination alias: the store's first channel."""
    destination = WebhookChannel.objects.filter(store=store).order_by("id").first()
    if destination is None:
        raise NotFound("This store has no webhook destination.")
    return destination


def destination_secret_get(*, store) -> str | None:
    """The store's current signing secret; None without a destination (the alias shows it)."""
    if not WebhookChannel.objects.filter(store=store).exists():
        return None
    found = WebhookSigningSecret.objects.filter(store=store).values_list("secret", flat=True)
    return found.first()


def destination_url_get(*, store) -> str | None:
    """The URL of the store's destination; None without a destination."""
    found = WebhookChannel.objects.filter(store=store).order_by("id")
    return found.values_list("url", flat=True).first()


class WebhookDestinationPutSerializer(ClosedObjectSerializer):
    """Body of PUT /api/v2/webhook-destination."""

    url = ChannelUrlField(
        help_text="https URL receiving the deliveries. Private, loopback, link-local and cloud "
        "metadata addresses are refused with 422 (link-local and metadata even where the "
        "deployment allows private destinations, in development). A host name must resolve "
        "within WEBHOOKS_DNS_TIMEOUT_SECONDS (2 s by default) to allowed addresses only; the "
        "422 of a name does not say which of these it failed."
    )
    event_types = EventTypeListField(
        help_text="Event types to deliver; see GET /api/v2/webhook-event-types."
    )
    enabled = StrictBooleanField(required=False, default=True)


class WebhookDestinationSerializer(serializers.ModelSerializer):
    """The store's destination; the secret is shown only on creation and rotation."""

    url = ChannelUrlReadField(
        help_text="The full URL for a credential with `webhook:write`; otherwise only its "
        "origin, scheme://host[:port] (a staff member's key, a `webhook:read` key): the path "
        "and query can be a credential."
    )
    disabled_reason = serializers.SerializerMethodField()
    event_types = serializers.ListField(child=serializers.ChoiceField(choices=sorted(EVENT_TYPES)))

    class Meta:
        model = WebhookChannel
        fields = ["url", "event_types", "enabled", "disabled_reason", "created_at", "updated_at"]

    def get_disabled_reason(self, destination) -> str | None:
        return destination.disabled_reason or None


class WebhookDestinationWithSecretSerializer(WebhookDestinationSerializer):
    # The store-wide signing secret (webhooks.models.WebhookSigningSecret).
    secret = serializers.SerializerMethodField()

    class Meta(WebhookDestinationSerializer.Meta):
        fields = [*WebhookDestinationSerializer.Meta.fields, "secret"]

    def get_secret(self, destination) -> str:
        return signing_secrets(store_id=destination.store_id)[0]


WEBHOOK_DESTINATION_PUT_EXAMPLE = {
    "url": "https://hooks.example.com/storefront",
    "event_types": ["order.completed"],
    "enabled": True,
}
WEBHOOK_DESTINATION_EXAMPLE = {
    **WEBHOOK_DESTINATION_PUT_EXAMPLE,
    "disabled_reason": None,
    "created_at": "2026-06-01T09:00:00Z",
    "updated_at": "2026-06-01T09:00:00Z",
}
WEBHOOK_DESTINATION_WITH_SECRET_EXAMPLE = {
    **WEBHOOK_DESTINATION_EXAMPLE,
    "secret": "whsec_c2lnbmluZy1zZWNyZXQtZXhhbXBsZS0wMTIzNDU2Nzg5YWI=",
}


# What the idempotency record of a destination write holds only as a digest (core/api/
# idempotency.py Withheld; docs/decisions/hardening.md, Hardening IV 3 and 4).
SECRET_WITHHELD = Withheld(
    name="secret",
    # A replay shows the secret while it is still the destination's; once rotated or deleted
    # it cannot be shown again.
    current=lambda request: [destination_secret_get(store=request.store)],
    own_credential=True,
    refusal="The signing secret this request returned is shown again only to the credential "
    "that made the request, and only until it is rotated or deleted; use a new "
    "Idempotency-Key.",
)
URL_WITHHELD = Withheld(
    name="url",
    # The replaying request's own body (identical to the first, or the replay is a 409), or
    # the destination as it is now; otherwise the replay shows the origin, as to a reader.
    current=lambda request: [
        request.data.get("url") if isinstance(request.data, dict) else None,
        destination_url_get(store=request.store),
    ],
    kept=url_origin,
)


def _destination_response(serializer_class, destination, request, code=200) -> Response:
    # The full URL only for who may change it (ChannelUrlReadField).
    url_in_full = "webhook:write" in resolve_store_context(request).effective_abilities
    body = serializer_class(destination, context={"url_in_full": url_in_full}).data
    return Response({"data": body}, status=code)


# /api/v2/webhook-destination stays one release as a deprecated alias of the store's first
# channel (docs/decisions/webhooks.md "3. /api/v2/webhook-destination"): every answer says so,
# Deprecation (RFC 9745, a Unix time), Sunset (RFC 8594, an HTTP-date) and the successor.
DESTINATION_DEPRECATED_AT = datetime(2026, 11, 28, tzinfo=UTC)
DESTINATION_SUNSET_AT = datetime(2027, 3, 1, tzinfo=UTC)
DESTINATION_DEPRECATION_HEADERS = {
    "Deprecation": f"@{int(DESTINATION_DEPRECATED_AT.timestamp())}",
    "Sunset": format_datetime(DESTINATION_SUNSET_AT, usegmt=True),
    "Link": '</api/v2/webhook-channels>; rel="successor-version"',
}


@extend_schema(deprecated=True)
class WebhookDestinationViewSet(WebhookAreaMixin, viewsets.ViewSet):
    # The store's one destination, served at the prefix itself (core/api/routers.py).
    singleton = True

    def finalize_response(self, request, response, *args, **kwargs):
        # Errors included: a client that only ever sees its 404 learns it too.
        response = super().finalize_response(request, response, *args, **kwargs)
        for name, value in DESTINATION_DEPRECATION_HEADERS.items():
            response[name] = value
        return response

    @extend_schema(
        operation_id="webhook_destination_retrieve",
        summary="The store's webhook destination",
        description="The store's one webhook destination, without its signing secret; a 404 "
        "when none is set. `url` is the origin only unless the credential has `webhook:write`.",
        responses={
            200: data_envelope("WebhookDestinationResponse", WebhookDestinationSerializer),
            **error_responses(403, 404),
        },
        examples=[response_example("Destination", {"data": WEBHOOK_DESTINATION_EXAMPLE})],
    )
    def retrieve(self, request):
        destination = destination_get(store=request.store)
        return _destination_response(WebhookDestinationSerializer, destination, request)

    @extend_schema(
        operation_id="webhook_destination_put",
        summary="Create or replace the store's webhook destination",
        description="Creates (201, with the signing `secret`, shown only now) or replaces "
        "(200, without the secret) the store's one webhook destination.",
        request=WebhookDestinationPutSerializer,
        responses={
            200: data_envelope("WebhookDestinationUpdatedResponse", WebhookDestinationSerializer),
            201: data_envelope(
                "WebhookDestinationCreatedResponse", WebhookDestinationWithSecretSerializer
            ),
            # 429/503: the URL's DNS check is at its bound (webhooks/dispatch/outbound.py)
            **error_responses(403, 409, 415, 422, 503),
        },
        examples=[
            OpenApiExample("Destination", value=WEBHOOK_DESTINATION_PUT_EXAMPLE, request_only=True),
            response_example("Replaced", {"data": WEBHOOK_DESTINATION_EXAMPLE}),
            response_example(
                "Created, with its signing secret",
                {"data": WEBHOOK_DESTINATION_WITH_SECRET_EXAMPLE},
                201,
            ),
        ],
    )
    @idempotent(
        operation="webhooks.destination_put",
        replayed_statuses=[200, 201, 422],
        withheld=[SECRET_WITHHELD, URL_WITHHELD],
    )
    def update(self, request):
        payload = WebhookDestinationPutSerializer(
            data=request.data, context={"store": request.store}
        )
        payload.is_valid(raise_exception=True)
        destination, created = destination_put(store=request.store, **payload.validated_data)
        if created:
            serializer = WebhookDestinationWithSecretSerializer
            return _destination_response(serializer, destination, request, code=201)
        return _destination_response(WebhookDestinationSerializer, destination, request)

    @extend_schema(
        operation_id="webhook_destination_delete",
        summary="Delete the store's webhook destination",
        description="Removes the destination (204). Deliveries still waiting for it are never "
        "sent: `disabled` if never tried, `failed` if tried. A 404 when none is set.",
        responses={204: None, **error_responses(403, 404, 409, 422)},
    )
    @idempotent(operation="webhooks.destination_delete", replayed_statuses=[204, 404])
    def destroy(self, request):
        destination_delete(store=request.store)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        operation_id="webhook_destination_rotate_secret",
        summary="Rotate the destination's signing secret",
        description="Replaces the signing secret and returns it (the only time it is shown). "
        "The previous secret also signs deliveries for 24 hours.",
        request=None,
        responses={
            200: data_envelope(
                "WebhookDestinationRotatedResponse", WebhookDestinationWithSecretSerializer
            ),
            **error_responses(403, 404, 409, 415, 422),
        },
        examples=[
            response_example(
                "New signing secret", {"data": WEBHOOK_DESTINATION_WITH_SECRET_EXAMPLE}
            )
        ],
    )
    # Above @action, not under it: @action replaces the function's `kwargs`, where
    # drf-spectacular keeps the Idempotency-Key and Idempotent-Replayed declarations.
    @idempotent(
        operation="webhooks.destination_rotate_secret",
        replayed_statuses=[200, 404],
        withheld=[SECRET_WITHHELD, URL_WITHHELD],
    )
    @action(detail=False, methods=["post"], url_path="rotate-secret")
    def rotate_secret(self, request):
        signing_secret_rotate(store=request.store)
        destination = destination_get(store=request.store)
        serializer = WebhookDestinationWithSecretSerializer
        return _destination_response(serializer, destination, request)
