"""OpenAPI pieces shared by every view: the error envelope and the common error responses."""

from drf_spectacular.drainage import set_override
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    inline_serializer,
)
from rest_framework import serializers


class ErrorEnvelopeSerializer(serializers.Serializer):
    type = serializers.CharField()
    code = serializers.CharField()
    message = serializers.CharField()
    status = serializers.IntegerField()
    param = serializers.CharField(allow_null=True)
    request_id = serializers.CharField()
    docs_url = serializers.URLField()
    errors = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()), required=False
    )


RATE_LIMIT_RESPONSE_HEADERS = [
    OpenApiParameter(
        "Retry-After",
        {"type": "integer", "minimum": 1},
        OpenApiParameter.HEADER,
        response=[429, 503],
        required=True,
        description="Seconds to wait before retrying.",
    ),
    *(
        OpenApiParameter(
            name,
            {"type": "integer", "minimum": 0},
            OpenApiParameter.HEADER,
            response=[429],
            required=False,
            description=f"{description} Sent when the per-credential request budget refused "
            "the request; absent on other limits (such as store creation's).",
        )
        for name, description in [
            ("X-RateLimit-Limit", "Requests per minute of this credential."),
            ("X-RateLimit-Remaining", "Requests left in the current window (0)."),
            ("X-RateLimit-Reset", "Seconds until the current window ends."),
        ]
    ),
]


class StorefrontAutoSchema(AutoSchema):
    """DEFAULT_SCHEMA_CLASS: declares the headers every 429 and 503 carries on every operation
    that lists them (all of them, through `error_responses`), the 413 of operations with a body,
    and X-STORE on store-scoped views (a `permission_area`: stores.access.StorePermission)."""

    def get_override_parameters(self):
        store = [STORE_HEADER_PARAMETER] if hasattr(self.view, "permission_area") else []
        return [*super().get_override_parameters(), *store, *RATE_LIMIT_RESPONSE_HEADERS]

    def _get_response_bodies(self, direction="response"):
        """Operations that take a body also answer 413 (core.api.middleware, a body over
        DATA_UPLOAD_MAX_MEMORY_SIZE), with the envelope of their other errors. Here, not in
        get_response_serializers, which @extend_schema replaces."""
        responses = super()._get_response_bodies(direction)
        if self.method in ("POST", "PUT", "PATCH") and "400" in responses:
            responses["413"] = self._get_response_for_code(ERROR, "413", direction=direction)
        return responses


class RequiredBodySchema(StorefrontAutoSchema):
    """For views whose POST/PUT body is required: drf-spectacular marks raw (dict) and oneOf
    request schemas optional, which tells clients (and the contract run) that no body is fine."""

    def _get_request_for_media_type(self, serializer, direction="request"):
        schema, required = super()._get_request_for_media_type(serializer, direction)
        return schema, required or self.method in ("POST", "PUT")


ERROR = OpenApiResponse(ErrorEnvelopeSerializer, description="Error envelope")


def error_responses(*statuses: int) -> dict:
    """The statuses a view can answer with the envelope; 400, 401, 406 (an `Accept` that JSON
    cannot satisfy: content negotiation runs on every DRF view), 429, 500 and 503 (a statement
    past the request's timeout, core/database/connections.py) always apply. The 429 and 503 headers
    (Retry-After, X-RateLimit-*) come with `StorefrontAutoSchema`."""
    return {status: ERROR for status in sorted({400, 401, 406, 429, 500, 503, *statuses})}


STORE_HEADER_PARAMETER = OpenApiParameter(
    "X-STORE",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="Store slug. Required with OAuth tokens; API keys default to their current "
    "store, else their first accessible store.",
)


def response_example(name: str, value, status: int = 200) -> OpenApiExample:
    """The OpenAPI example of one response status (request and response examples share a list)."""
    return OpenApiExample(name, value=value, response_only=True, status_codes=[str(status)])


def data_envelope(name: str, serializer, many: bool = False):
    """`{data: <object>}` (or a list) as v2 wraps single resources."""
    envelope = inline_serializer(name=name, fields={"data": serializer(many=many)})
    # One object even as the answer of a ViewSet's `list` action, which drf-spectacular would
    # otherwise declare as an array of envelopes.
    set_override(envelope, "many", False)
    return envelope
