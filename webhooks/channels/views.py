"""/api/v2/webhook-channels: the nine operations of the official SDK's
`client.webhook_channels`, on one ViewSet registered in webhooks/urls.py.

Abilities: GET needs `webhook:read`, everything else `webhook:write` (StorePermission; the
search is a POST, so a write). An `Idempotency-Key` is accepted on the writes, never required.
"""

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiTypes, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from core.api.idempotency import Withheld, idempotent
from core.api.pagination import LaravelPagination
from core.api.schema import data_envelope, error_responses, response_example
from stores.access import resolve_store_context
from webhooks.channels.recovery import channel_recover
from webhooks.channels.selectors import channel_get, channels_of, signing_secret_configured
from webhooks.channels.serializers import (
    WEBHOOK_CHANNEL_EXAMPLE,
    WebhookChannelCreateSerializer,
    WebhookChannelRecoverResultSerializer,
    WebhookChannelRecoverSerializer,
    WebhookChannelReplaceSerializer,
    WebhookChannelSearchSerializer,
    WebhookChannelSerializer,
    WebhookChannelTestResultSerializer,
    WebhookChannelTestSerializer,
    WebhookChannelUpdateSerializer,
    WebhookSigningSecretSerializer,
    WebhookSigningSecretStateSerializer,
)
from webhooks.channels.services import (
    channel_create,
    channel_delete,
    channel_test_send,
    channel_update,
    signing_secret_supplied,
)
from webhooks.deliveries.views import WebhookAreaMixin
from webhooks.models import url_origin

CHANNEL_PATH_PARAMETER = OpenApiParameter(
    "channel",
    OpenApiTypes.UUID,
    OpenApiParameter.PATH,
    description="Channel id (UUID); anything else, or another store's channel, is a 404.",
)
# The stored response of a channel write holds its URL as a digest and origin
# (docs/decisions/hardening.md, Hardening IV 3 and 4); a replay with the same body shows it.
CHANNEL_URL_WITHHELD = Withheld(
    name="url",
    current=lambda request: [request.data.get("url") if isinstance(request.data, dict) else None],
    kept=url_origin,
)
WRITE_EXAMPLE = {
    "name": "Fulfilment",
    "url": "https://hooks.example.com/storefront",
    "allowed_notifications": ["order.completed"],
}
SEARCH_PATH = "https://api.example.com/api/v2/webhook-channels/search"
SEARCH_PAGE_EXAMPLE = {
    "data": [WEBHOOK_CHANNEL_EXAMPLE],
    "links": {"first": f"{SEARCH_PATH}?page=1", "last": f"{SEARCH_PATH}?page=1"}
    | {"prev": None, "next": None},
    "meta": {
        "current_page": 1,
        "from": 1,
        "last_page": 1,
        "links": [
            {"url": None, "label": "&laquo; Previous", "active": False},
            {"url": f"{SEARCH_PATH}?page=1", "label": "1", "active": True},
            {"url": None, "label": "Next &raquo;", "active": False},
        ],
        "path": SEARCH_PATH,
        "per_page": 15,
        "to": 1,
        "total": 1,
    },
}
CHANNEL_RESPONSE = data_envelope("WebhookChannelResponse", WebhookChannelSerializer)


class BodyPagination(LaravelPagination.documented_at("/api/v2/webhook-channels/search")):
    """The search's page and limit come in its body (the SDK also repeats them as query
    parameters, and asks for the next pages by query): the body's win."""

    def paginate_queryset(self, queryset, request, view=None):
        self.body_params = getattr(view, "body_page_params", {})
        return super().paginate_queryset(queryset, request, view)

    def page_params(self, request):
        limit, page = super().page_params(request)
        return self.body_params.get("limit", limit), self.body_params.get("page", page)


class WebhookChannelViewSet(WebhookAreaMixin, viewsets.GenericViewSet):
    serializer_class = WebhookChannelSerializer
    pagination_class = LaravelPagination.documented_at("/api/v2/webhook-channels")
    lookup_url_kwarg = "channel"
    read_actions = ("search",)  # a POST that reads: webhook:read is enough
    # Any id reaches the view after authentication; a malformed one is the selector's 404.
    lookup_value_regex = "[^/]+"

    def _context(self) -> dict:
        request = self.request
        return {
            "url_in_full": "webhook:write" in resolve_store_context(request).effective_abilities,
            "signing_secret_configured": signing_secret_configured(store=request.store),
        }

    def _render(self, channel, code=200) -> Response:
        body = WebhookChannelSerializer(channel, context=self._context()).data
        return Response({"data": body}, status=code)

    def _page(self, channels) -> Response:
        page = self.paginate_queryset(channels)
        items = WebhookChannelSerializer(page, many=True, context=self._context()).data
        return self.get_paginated_response(items)

    @extend_schema(
        operation_id="listWebhookChannels",
        summary="List webhook channels",
        description="The store's channels, oldest first, as Laravel pages.",
        responses={200: WebhookChannelSerializer(many=True), **error_responses(403, 422)},
    )
    def list(self, request):
        url_in_full = self._context()["url_in_full"]
        return self._page(channels_of(store=request.store, url_in_full=url_in_full))

    @extend_schema(
        operation_id="createWebhookChannel",
        summary="Create a webhook channel",
        description="Creates a channel: its URL (checked against the address guard) receives the "
        "allowed event types, signed with the store's signing secret. A store has at most 20 "
        "channels (WEBHOOKS_STORE_CHANNELS_MAX): one more is a 422 (`param` "
        "`non_field_errors`).",
        request=WebhookChannelCreateSerializer,
        responses={201: CHANNEL_RESPONSE, **error_responses(403, 409, 415, 422, 503)},
        examples=[
            OpenApiExample("Channel", value=WRITE_EXAMPLE, request_only=True),
            response_example("Channel", {"data": WEBHOOK_CHANNEL_EXAMPLE}, 201),
        ],
    )
    @idempotent(
        operation="webhooks.channel_create",
        replayed_statuses=[201, 422],
        withheld=[CHANNEL_URL_WITHHELD],
    )
    def create(self, request):
        payload = WebhookChannelCreateSerializer(
            data=request.data, context={"store": request.store}
        )
        payload.is_valid(raise_exception=True)
        channel = channel_create(store=request.store, **payload.validated_data)
        return self._render(channel, code=status.HTTP_201_CREATED)

    @extend_schema(
        operation_id="getWebhookChannel",
        summary="A webhook channel",
        description="One channel of the store, never with a secret.",
        parameters=[CHANNEL_PATH_PARAMETER],
        responses={200: CHANNEL_RESPONSE, **error_responses(403, 404)},
        examples=[response_example("Channel", {"data": WEBHOOK_CHANNEL_EXAMPLE})],
    )
    def retrieve(self, request, channel: str):
        return self._render(channel_get(store=request.store, channel_id=channel))

    def _write(self, request, channel: str, serializer_class, partial: bool) -> Response:
        found = channel_get(store=request.store, channel_id=channel)
        payload = serializer_class(
            data=request.data, partial=partial, context={"store": request.store}
        )
        payload.is_valid(raise_exception=True)
        return self._render(channel_update(channel=found, **payload.validated_data))

    @extend_schema(
        operation_id="replaceWebhookChannel",
        summary="Replace a webhook channel",
        description="The whole representation: name, url and allowed_notifications.",
        parameters=[CHANNEL_PATH_PARAMETER],
        request=WebhookChannelReplaceSerializer,
        responses={200: CHANNEL_RESPONSE, **error_responses(403, 404, 409, 415, 422, 503)},
        examples=[
            OpenApiExample("Channel", value=WRITE_EXAMPLE, request_only=True),
            response_example("Channel", {"data": WEBHOOK_CHANNEL_EXAMPLE}),
        ],
    )
    @idempotent(
        operation="webhooks.channel_replace",
        replayed_statuses=[200, 404, 422],
        withheld=[CHANNEL_URL_WITHHELD],
    )
    def update(self, request, channel: str):
        return self._write(request, channel, WebhookChannelReplaceSerializer, partial=False)

    @extend_schema(
        operation_id="updateWebhookChannel",
        summary="Update a webhook channel",
        description="Any of name, url, allowed_notifications; `enabled: true` turns a "
        "disabled channel back on.",
        parameters=[CHANNEL_PATH_PARAMETER],
        request=WebhookChannelUpdateSerializer,
        responses={200: CHANNEL_RESPONSE, **error_responses(403, 404, 409, 415, 422, 503)},
        examples=[
            OpenApiExample("Turn back on", value={"enabled": True}, request_only=True),
            response_example("Channel", {"data": WEBHOOK_CHANNEL_EXAMPLE}),
        ],
    )
    @idempotent(
        operation="webhooks.channel_update",
        replayed_statuses=[200, 404, 422],
        withheld=[CHANNEL_URL_WITHHELD],
    )
    def partial_update(self, request, channel: str):
        return self._write(request, channel, WebhookChannelUpdateSerializer, partial=True)

    @extend_schema(
        operation_id="deleteWebhookChannel",
        summary="Delete a webhook channel",
        description="Answers the channel as it was. Deliveries still waiting for it are never "
        "sent: `disabled` if never tried, `failed` if tried.",
        parameters=[CHANNEL_PATH_PARAMETER],
        responses={200: CHANNEL_RESPONSE, **error_responses(403, 404, 409)},
        examples=[response_example("Channel as it was", {"data": WEBHOOK_CHANNEL_EXAMPLE})],
    )
    @idempotent(
        operation="webhooks.channel_delete",
        replayed_statuses=[200, 404],
        withheld=[CHANNEL_URL_WITHHELD],
    )
    def destroy(self, request, channel: str):
        found = channel_get(store=request.store, channel_id=channel)
        response = self._render(found)
        channel_delete(channel=found)
        return response

    @extend_schema(
        operation_id="searchWebhookChannels",
        summary="Search webhook channels",
        description="Channels whose name (or, for `webhook:write`, URL) contains `search`, "
        "and that are enabled and subscribed to `event` when given; Laravel pages.",
        request=WebhookChannelSearchSerializer,
        responses={
            200: BodyPagination().get_paginated_response_schema(
                {"type": "array", "items": {"$ref": "#/components/schemas/WebhookChannel"}}
            ),
            **error_responses(403, 415, 422),
        },
        examples=[
            OpenApiExample(
                "Search",
                value={
                    "search": {"value": "fulfil"},
                    "event": "order.completed",
                    "page": 1,
                    "limit": 15,
                },
                request_only=True,
            ),
            response_example("Page", SEARCH_PAGE_EXAMPLE),
        ],
    )
    @action(detail=False, methods=["post"], pagination_class=BodyPagination)
    def search(self, request):
        payload = WebhookChannelSearchSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        body = payload.validated_data
        self.body_page_params = {k: body[k] for k in ("page", "limit") if k in body}
        channels = channels_of(
            store=request.store,
            search=body.get("search"),
            event=body.get("event"),
            url_in_full=self._context()["url_in_full"],
        )
        return self._page(channels)

    @extend_schema(
        operation_id="rotateWebhookSigningSecret",
        summary="Set the store's webhook signing secret",
        description="Sets the signing secret of all the store's channels (write-only: never "
        "returned or logged). The previous secret keeps signing, as a second signature, for "
        "24 hours. A `whsec_` secret is used as Standard Webhooks defines it; any other string "
        "is the HMAC key itself.",
        request=WebhookSigningSecretSerializer,
        responses={
            200: data_envelope("WebhookSigningSecretResponse", WebhookSigningSecretStateSerializer),
            **error_responses(403, 409, 415, 422),
        },
        examples=[
            OpenApiExample(
                "Secret",
                value={"signing_secret": "whsec_c2VjcmV0LWZvci10ZXN0cy0wMTIzNDU2Nzg5YWJjZA=="},
                request_only=True,
            ),
            response_example("Configured", {"data": {"signing_secret_configured": True}}),
        ],
    )
    @idempotent(operation="webhooks.signing_secret_set", replayed_statuses=[200, 422])
    @action(detail=False, methods=["put"], url_path="signing-secret")
    def signing_secret(self, request):
        payload = WebhookSigningSecretSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        signing_secret_supplied(store=request.store, **payload.validated_data)
        return Response({"data": {"signing_secret_configured": True}})

    @extend_schema(
        operation_id="sendTestWebhook",
        summary="Send a test event to a channel",
        description="Sends one signed mock event (the type's example as an event of the store, "
        'in the body every delivery has, with `"test": true`) now: one attempt within '
        "WEBHOOKS_TEST_SEND_TIMEOUT_SECONDS (5 s by default), no retry, no redirect followed; "
        "never in the journal. 200 when the receiver answered 2xx; otherwise a 422 (`param` "
        "`url`) saying what it answered, or 409 when the channel is disabled. One test send "
        "per store at a time: another one meanwhile is a 429 with Retry-After (the seconds "
        "until the first is over at the latest); a 503 with Retry-After when the server is "
        "waiting on as many receivers as it allows.",
        parameters=[CHANNEL_PATH_PARAMETER],
        request=WebhookChannelTestSerializer,
        responses={
            200: data_envelope("WebhookChannelTestResponse", WebhookChannelTestResultSerializer),
            **error_responses(403, 404, 409, 415, 422, 503),
        },
        examples=[
            OpenApiExample("Event", value={"event": "order.completed"}, request_only=True),
            response_example(
                "Delivered",
                {
                    "data": {
                        "channel_id": WEBHOOK_CHANNEL_EXAMPLE["id"],
                        "event": "order.completed",
                        "status": "delivered",
                    }
                },
            ),
        ],
    )
    @action(detail=True, methods=["post"])
    def test(self, request, channel: str):
        found = channel_get(store=request.store, channel_id=channel)
        payload = WebhookChannelTestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        event_type = payload.validated_data["event"]
        channel_test_send(store=request.store, channel=found, event_type=event_type)
        result = {"channel_id": str(found.uid), "event": event_type, "status": "delivered"}
        return Response({"data": result})

    @extend_schema(
        operation_id="recoverWebhookChannel",
        summary="Recover every event a channel missed",
        description="Queues one new pending delivery for every retained event in [since, "
        "until) (until defaults to now) that the channel is subscribed to and that has no "
        "succeeded and no pending delivery to it. 202 with the number queued; again right "
        "away it queues 0, and an event a recover sent is not queued again (a disable and "
        "enable included). `since` outside the retention or not before `until`: 422; a "
        "disabled channel: 409 (enable it first). At most 5000 per call: when more are "
        "missed, `until` is where it stopped; call again from there. Budgeted per store: 20 "
        "calls and 20000 queued deliveries an hour, and none while the store has 50000 "
        "pending deliveries; past them a 429 with Retry-After.",
        parameters=[CHANNEL_PATH_PARAMETER],
        request=WebhookChannelRecoverSerializer,
        responses={
            202: data_envelope(
                "WebhookChannelRecoverResponse", WebhookChannelRecoverResultSerializer
            ),
            **error_responses(403, 404, 409, 415, 422),
        },
        examples=[
            OpenApiExample("Window", value={"since": "2026-06-01T00:00:00Z"}, request_only=True),
            response_example(
                "Queued",
                {
                    "data": {
                        "queued": 3,
                        "since": "2026-06-01T00:00:00Z",
                        "until": "2026-06-02T10:00:00Z",
                    }
                },
                202,
            ),
        ],
    )
    @action(detail=True, methods=["post"])
    def recover(self, request, channel: str):
        found = channel_get(store=request.store, channel_id=channel)
        payload = WebhookChannelRecoverSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        window = payload.validated_data
        result = channel_recover(channel=found, since=window["since"], until=window.get("until"))
        body = WebhookChannelRecoverResultSerializer(result).data
        return Response({"data": body}, status=status.HTTP_202_ACCEPTED)
