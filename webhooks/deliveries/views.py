"""TODO docstring."""

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
from core.api.idempotency import idempotent
from core.api.pagination import LaravelPagination
from core.api.schema import data_envelope, error_responses, response_example
from core.database.replica import read_preferring_replica
from stores.access import StorePermission
from webhooks.deliveries.filters import WebhookDeliveryFilter
from webhooks.deliveries.selectors import delivery_get
from webhooks.deliveries.serializers import (
    WEBHOOK_DELIVERY_EXAMPLE,
    WEBHOOK_DELIVERY_REPLAYED_EXAMPLE,
    WebhookDeliveryAttemptListSerializer,
    WebhookDeliveryReplaySerializer,
    WebhookDeliverySerializer,
)
from webhooks.deliveries.services import delivery_replay
from webhooks.models import WebhookDelivery

# The derived schema of `delivery` would be lookup_value_regex (any string); ids are UUIDs.
DELIVERY_PATH_PARAMETER = OpenApiParameter(
    "delivery",
    OpenApiTypes.UUID,
    OpenApiParameter.PATH,
    description="Delivery id (UUID); anything else, or another store's delivery, is a 404.",
)


class WebhookAreaMixin:
    permission_classes = [StorePermission]
    permission_area = "webhook"


@extend_schema_view(
    list=extend_schema(
        operation_id="webhook_deliveries_list",
        summary="List the store's webhook deliveries",
        description="The store's webhook deliveries, newest first.",
        responses={200: WebhookDeliverySerializer(many=True), **error_responses(403, 422)},
    )
)
class WebhookDeliveryViewSet(WebhookAreaMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    # Newest first: a page's ids are read by an index-only scan of delivery_store_created_id_idx,
    # which keeps a deep page cheap with the paginator's deferred join
    # (docs/benchmarks/coupons-growth.md).
    # With its channel, for `channel_id` (one join, no query per row).
    queryset = WebhookDelivery.objects.select_related("channel").order_by("-created_at", "-id")
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
        description="One delivery of the store: its status, the channel's last answer and "
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
        description="Sends the retained event again to the configured channel as a new "
        "`pending` delivery (new id, same event_id). It never repeats the business action; "
        "the channel, payload and query cannot be overridden (the body must be `{}`).",
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
