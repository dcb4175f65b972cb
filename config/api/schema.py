"""OpenAPI pieces shared by every view: the error envelope and the common error responses."""

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, inline_serializer
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


ERROR = OpenApiResponse(ErrorEnvelopeSerializer, description="Error envelope")


def error_responses(*statuses: int) -> dict:
    """The statuses a view can answer with the envelope; 401, 429 and 500 always apply."""
    return {status: ERROR for status in sorted({400, 401, 429, 500, *statuses})}


STORE_HEADER_PARAMETER = OpenApiParameter(
    "X-STORE",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="Store slug. Required with OAuth tokens; API keys default to their current "
    "store, else their first accessible store.",
)


def data_envelope(name: str, serializer, many: bool = False):
    """`{data: <object>}` (or a list) as v2 wraps single resources."""
    return inline_serializer(name=name, fields={"data": serializer(many=many)})
