"""Webhook endpoints (v2): the destination, event types, delivery history and replay."""

from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiParameter, OpenApiTypes, extend_schema
from rest_framework import status
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.errors import ValidationFailed
from config.api.idempotency import idempotency_key_from, idempotent_response
from config.api.pagination import LaravelPagination
from config.api.schema import (
    STORE_HEADER_PARAMETER,
    RequiredBodySchema,
    data_envelope,
    error_responses,
    idempotency_key_parameter,
)
from events.registry import EVENT_TYPES
from stores.access import StorePermission
from webhooks.addresses import URL_PATTERN
from webhooks.filters import EVENT_ID_PATTERN, WebhookDeliveryFilter
from webhooks.models import WebhookDelivery
from webhooks.selectors import (
    deliveries_of_store,
    delivery_get,
    destination_get,
    event_types_list,
)
from webhooks.serializers import (
    MAX_EVENT_TYPES,
    WebhookDeliverySerializer,
    WebhookDestinationInputSerializer,
    WebhookDestinationSerializer,
    WebhookDestinationWithSecretSerializer,
    WebhookEventTypeSerializer,
)
from webhooks.services import delivery_replay, destination_delete, destination_put
from webhooks.services import destination_secret_rotate as secret_rotate

# Request and parameter schemas that state every rule a schema can state (the contract run
# checks that schema-valid requests are accepted).
DESTINATION_PUT_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["url", "event_types"],
    "properties": {
        "url": {
            "type": "string",
            "maxLength": 2048,
            "pattern": URL_PATTERN,
            "description": "https URL receiving the deliveries. Private, loopback, link-local "
            "and cloud metadata addresses (also as what a name resolves to) are refused with "
            "422 unless the deployment allows private destinations (development).",
        },
        "event_types": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_EVENT_TYPES,
            "items": {"type": "string", "enum": sorted(EVENT_TYPES)},
            "description": "Event types to deliver; see GET /api/v2/webhook-event-types.",
        },
        "enabled": {"type": "boolean", "default": True},
    },
}
EMPTY_OBJECT_SCHEMA = {"type": "object", "additionalProperties": False, "properties": {}}
EVENT_ID_PARAMETER = OpenApiParameter(
    "event_id",
    {"type": "string", "pattern": EVENT_ID_PATTERN},
    OpenApiParameter.QUERY,
    description="Only deliveries of this event (evt_ and 26 characters).",
)

DELIVERY_PARAMETER = OpenApiParameter(
    "delivery",
    OpenApiTypes.UUID,
    OpenApiParameter.PATH,
    description="Delivery id (UUID); anything else, or another store's delivery, is a 404.",
)


class WebhookAreaView(APIView):
    permission_classes = [StorePermission]
    permission_area = "webhook"


class WebhookDestinationView(WebhookAreaView):
    schema = RequiredBodySchema()

    @extend_schema(
        operation_id="webhook_destination_retrieve",
        parameters=[STORE_HEADER_PARAMETER],
        responses={
            200: data_envelope("WebhookDestinationResponse", WebhookDestinationSerializer),
            **error_responses(403, 404),
        },
    )
    def get(self, request):
        destination = destination_get(store=request.store)
        return Response({"data": WebhookDestinationSerializer(destination).data})

    @extend_schema(
        operation_id="webhook_destination_put",
        description="Creates (201, with the signing `secret`, shown only now) or replaces "
        "(200, without the secret) the store's one webhook destination.",
        parameters=[STORE_HEADER_PARAMETER],
        request={"application/json": DESTINATION_PUT_SCHEMA},
        responses={
            200: data_envelope("WebhookDestinationUpdatedResponse", WebhookDestinationSerializer),
            201: data_envelope(
                "WebhookDestinationCreatedResponse", WebhookDestinationWithSecretSerializer
            ),
            **error_responses(403, 415, 422),
        },
    )
    def put(self, request):
        payload = WebhookDestinationInputSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        destination, created = destination_put(store=request.store, **payload.validated_data)
        if created:
            body = WebhookDestinationWithSecretSerializer(destination).data
            return Response({"data": body}, status=status.HTTP_201_CREATED)
        return Response({"data": WebhookDestinationSerializer(destination).data})

    @extend_schema(
        operation_id="webhook_destination_delete",
        parameters=[STORE_HEADER_PARAMETER],
        responses={204: None, **error_responses(403, 404)},
    )
    def delete(self, request):
        destination_delete(store=request.store)
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookDestinationSecretRotateView(WebhookAreaView):
    @extend_schema(
        operation_id="webhook_destination_rotate_secret",
        description="Replaces the signing secret and returns it (the only time it is shown). "
        "The previous secret also signs deliveries for 24 hours.",
        parameters=[STORE_HEADER_PARAMETER],
        request=None,
        responses={
            200: data_envelope(
                "WebhookDestinationRotatedResponse", WebhookDestinationWithSecretSerializer
            ),
            **error_responses(403, 404, 415),
        },
    )
    def post(self, request):
        destination = secret_rotate(store=request.store)
        return Response({"data": WebhookDestinationWithSecretSerializer(destination).data})


class WebhookEventTypeListView(WebhookAreaView):
    @extend_schema(
        operation_id="webhook_event_types_list",
        parameters=[STORE_HEADER_PARAMETER],
        responses={
            200: data_envelope("WebhookEventTypeList", WebhookEventTypeSerializer, many=True),
            **error_responses(403),
        },
    )
    def get(self, request):
        return Response({"data": event_types_list()})


class WebhookDeliveryListView(ListAPIView):
    permission_classes = [StorePermission]
    permission_area = "webhook"
    serializer_class = WebhookDeliverySerializer
    pagination_class = LaravelPagination
    filter_backends = [DjangoFilterBackend]
    filterset_class = WebhookDeliveryFilter

    def filter_queryset(self, queryset):
        # django-filter treats `?status=` as no filter; the schema says it is not a value.
        for name in WebhookDeliveryFilter.Meta.fields:
            if self.request.query_params.get(name, None) == "":
                raise ValidationFailed.field(name, "must not be empty")
        return super().filter_queryset(queryset)

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no request store
            return WebhookDelivery.objects.none()
        return deliveries_of_store(store=self.request.store)

    @extend_schema(
        operation_id="webhook_deliveries_list",
        description="The store's webhook deliveries, newest first.",
        parameters=[STORE_HEADER_PARAMETER, EVENT_ID_PARAMETER],
        responses={200: WebhookDeliverySerializer(many=True), **error_responses(403, 422)},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class WebhookDeliveryDetailView(WebhookAreaView):
    @extend_schema(
        operation_id="webhook_deliveries_retrieve",
        parameters=[STORE_HEADER_PARAMETER, DELIVERY_PARAMETER],
        responses={
            200: data_envelope("WebhookDeliveryResponse", WebhookDeliverySerializer),
            **error_responses(403, 404),
        },
    )
    def get(self, request, delivery: str):
        delivery = delivery_get(store=request.store, delivery_id=delivery)
        return Response({"data": WebhookDeliverySerializer(delivery).data})


class WebhookDeliveryReplayView(WebhookAreaView):
    @extend_schema(
        operation_id="webhook_deliveries_replay",
        description="Sends the retained event again to the configured destination as a new "
        "`pending` delivery (new id, same event_id). It never repeats the business action; "
        "the destination, payload and query cannot be overridden (the body must be `{}`).",
        parameters=[
            STORE_HEADER_PARAMETER,
            DELIVERY_PARAMETER,
            idempotency_key_parameter(required=False, min_length=8),
        ],
        request={"application/json": EMPTY_OBJECT_SCHEMA},
        responses={
            201: data_envelope("WebhookDeliveryReplayResponse", WebhookDeliverySerializer),
            **error_responses(403, 404, 409, 415, 422),
        },
    )
    def post(self, request, delivery: str):
        key = idempotency_key_from(request, required=False, min_length=8)

        def replay():
            if request.data:
                raise ValidationFailed(
                    {
                        name: ["is not allowed: the body must be an empty object"]
                        for name in sorted(request.data)
                    }
                )
            replayed = delivery_replay(store=request.store, delivery_id=delivery)
            return Response(
                {"data": WebhookDeliverySerializer(replayed).data}, status=status.HTTP_201_CREATED
            )

        return idempotent_response(
            request,
            operation="webhooks.delivery_replay",
            key=key,
            store_id=request.store.id,
            run=replay,
        )
