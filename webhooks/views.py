"""Webhook endpoints (v2): the destination, event types, delivery history and replay.

ViewSets registered in webhooks/urls.py; request bodies are validated by webhooks.serializers,
query parameters by webhooks.filters, and the OpenAPI schema is derived from both.
"""

from datetime import UTC, datetime
from email.utils import format_datetime

from django.db import DEFAULT_DB_ALIAS
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiTypes,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from core.api.errors import NotFound
from core.api.idempotency import Withheld, idempotent
from core.api.pagination import LaravelPagination
from core.api.schema import data_envelope, error_responses, response_example
from core.database.replica import read_preferring_replica
from stores.access import StorePermission, resolve_store_context
from webhooks.addresses import url_origin
from webhooks.filters import WebhookDeliveryFilter
from webhooks.models import WebhookDelivery
from webhooks.selectors import (
    delivery_get,
    destination_get,
    destination_secret_get,
    destination_url_get,
    event_types_list,
)
from webhooks.serializers import (
    WEBHOOK_DELIVERY_EXAMPLE,
    WEBHOOK_DELIVERY_REPLAYED_EXAMPLE,
    WEBHOOK_DESTINATION_EXAMPLE,
    WEBHOOK_DESTINATION_PUT_EXAMPLE,
    WEBHOOK_DESTINATION_WITH_SECRET_EXAMPLE,
    WEBHOOK_EVENT_TYPES_EXAMPLE,
    WebhookDeliveryAttemptListSerializer,
    WebhookDeliveryReplaySerializer,
    WebhookDeliverySerializer,
    WebhookDestinationPutSerializer,
    WebhookDestinationSerializer,
    WebhookDestinationWithSecretSerializer,
    WebhookEventTypeListSerializer,
)
from webhooks.services import (
    delivery_replay,
    destination_delete,
    destination_put,
    destination_secret_rotate,
)

# The derived schema of `delivery` would be lookup_value_regex (any string); ids are UUIDs.
DELIVERY_PATH_PARAMETER = OpenApiParameter(
    "delivery",
    OpenApiTypes.UUID,
    OpenApiParameter.PATH,
    description="Delivery id (UUID); anything else, or another store's delivery, is a 404.",
)

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
    # The full URL only for who may change it (DestinationUrlReadField).
    url_in_full = "webhook:write" in resolve_store_context(request).effective_abilities
    body = serializer_class(destination, context={"url_in_full": url_in_full}).data
    return Response({"data": body}, status=code)


class WebhookAreaMixin:
    permission_classes = [StorePermission]
    permission_area = "webhook"


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
            # 429/503: the URL's DNS check is at its bound (webhooks/outbound.py)
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
        destination_secret_rotate(store=request.store)
        destination = destination_get(store=request.store)
        serializer = WebhookDestinationWithSecretSerializer
        return _destination_response(serializer, destination, request)


class WebhookEventTypeViewSet(WebhookAreaMixin, viewsets.GenericViewSet):
    serializer_class = WebhookEventTypeListSerializer

    @extend_schema(
        operation_id="webhook_event_types_list",
        summary="List the event types a webhook can receive",
        description="Every event type the store's destination is sent, with its description.",
        responses={200: WebhookEventTypeListSerializer, **error_responses(403)},
        examples=[response_example("Event types", WEBHOOK_EVENT_TYPES_EXAMPLE)],
    )
    def list(self, request):
        return Response(self.get_serializer({"data": event_types_list()}).data)


@extend_schema_view(
    list=extend_schema(
        operation_id="webhook_deliveries_list",
        summary="List the store's webhook deliveries",
        description="The store's webhook deliveries, newest first.",
        responses={200: WebhookDeliverySerializer(many=True), **error_responses(403, 422)},
    )
)
class WebhookDeliveryViewSet(WebhookAreaMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    # Newest first: a page's ids are read by an index-only scan of delivery_store_created_id_idx
    # (the last page at 1M deliveries: 158 -> 56 ms with the paginator's deferred join,
    # docs/benchmarks/coupons-growth.md).
    # With its channel, for `channel_id` (one join, no query per row).
    queryset = WebhookDelivery.objects.select_related("destination").order_by("-created_at", "-id")
    serializer_class = WebhookDeliverySerializer
    filter_backends = [DjangoFilterBackend]
    filterset_class = WebhookDeliveryFilter
    pagination_class = LaravelPagination.documented_at("/api/v2/webhook-deliveries")
    lookup_url_kwarg = "delivery"
    # Anything up to the next slash reaches the view (after authentication), where a malformed
    # id is the selector's 404, as another store's id is; DELIVERY_PATH_PARAMETER says UUID.
    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        return super().get_queryset().filter(store=self.request.store)

    def list(self, request, *args, **kwargs):
        # The history reads from the replica when one is usable (core/database/replica.py).
        return read_preferring_replica(
            lambda using: mixins.ListModelMixin.list(self, request, *args, **kwargs)
        )

    @extend_schema(
        operation_id="webhook_deliveries_retrieve",
        summary="A webhook delivery, with its attempts",
        description="One delivery of the store: its status, the destination's last answer and "
        "each attempt. Another store's delivery, or an id that is not a UUID, is a 404.",
        parameters=[DELIVERY_PATH_PARAMETER],
        responses={
            200: data_envelope("WebhookDeliveryResponse", WebhookDeliverySerializer),
            **error_responses(403, 404),
        },
        examples=[response_example("Delivery", {"data": WEBHOOK_DELIVERY_EXAMPLE})],
    )
    def retrieve(self, request, delivery: str):
        def read(using):
            found = delivery_get(store=request.store, delivery_id=delivery)
            return self.get_serializer(found).data

        try:
            data = read_preferring_replica(read)  # core/database/replica.py
        except NotFound:
            # Maybe not replayed yet (a delivery just made, or replayed): the primary decides.
            data = read(DEFAULT_DB_ALIAS)
        return Response({"data": data})

    @extend_schema(
        operation_id="webhook_deliveries_replay",
        summary="Replay a delivery as a new pending delivery",
        description="Sends the retained event again to the configured destination as a new "
        "`pending` delivery (new id, same event_id). It never repeats the business action; "
        "the destination, payload and query cannot be overridden (the body must be `{}`).",
        parameters=[DELIVERY_PATH_PARAMETER],
        request=WebhookDeliveryReplaySerializer,
        responses={
            201: data_envelope("WebhookDeliveryReplayResponse", WebhookDeliverySerializer),
            **error_responses(403, 404, 409, 415, 422),
        },
        examples=[
            OpenApiExample("Empty body", value={}, request_only=True),
            response_example(
                "New pending delivery", {"data": WEBHOOK_DELIVERY_REPLAYED_EXAMPLE}, 201
            ),
        ],
    )
    # Above @action for the reason given at rotate_secret.
    @idempotent(
        operation="webhooks.delivery_replay", replayed_statuses=[201, 404, 422], min_length=8
    )
    @action(detail=True, methods=["post"])
    def replay(self, request, delivery: str):
        WebhookDeliveryReplaySerializer(data=request.data).is_valid(raise_exception=True)
        replayed = delivery_replay(store=request.store, delivery_id=delivery)
        return Response(
            {"data": self.get_serializer(replayed).data}, status=status.HTTP_201_CREATED
        )

    @extend_schema(
        operation_id="webhook_deliveries_attempts",
        summary="The attempts of a delivery",
        description="Each attempt of one delivery of the store, oldest first: when, how long, "
        "the receiver's status and, without an answer, what went wrong. Never the URL. "
        "Another store's delivery, or an id that is not a UUID, is a 404.",
        parameters=[DELIVERY_PATH_PARAMETER],
        responses={200: WebhookDeliveryAttemptListSerializer, **error_responses(403, 404)},
        examples=[
            response_example(
                "Attempts",
                {
                    "data": [
                        {
                            "attempt": 1,
                            "attempted_at": "2026-06-02T14:05:01Z",
                            "duration_ms": 10002,
                            "response_status": None,
                            "error": "timeout",
                        },
                        {
                            "attempt": 2,
                            "attempted_at": "2026-06-02T14:05:16Z",
                            "duration_ms": 84,
                            "response_status": 200,
                            "error": None,
                        },
                    ]
                },
            )
        ],
    )
    @action(detail=True, methods=["get"])
    def attempts(self, request, delivery: str):
        found = delivery_get(store=request.store, delivery_id=delivery)
        rows = found.attempt_records.order_by("number")
        return Response(WebhookDeliveryAttemptListSerializer({"data": rows}).data)
