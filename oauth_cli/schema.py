"""The OAuth protocol endpoints in /api/schema/: what their descriptions share.

drf-spectacular describes DRF views only, and these are django-oauth-toolkit's and Django's:
each endpoint class (schema_browser.py, schema_cli.py) is a DRF view that never serves a
request, attached to the real view's callable by `describes` (oauth_cli/urls.py) so the
generator finds it at the real path.
"""

import copy

from django.conf import settings
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from core.api.schema import ERROR, RATE_LIMIT_RESPONSE_HEADERS, RequiredBodySchema
from oauth_cli.serializers import OAuthErrorSerializer

FORM = "application/x-www-form-urlencoded"
HTML = "text/html"
CLI = settings.CLI_CLIENT_ID


def describes(endpoint: type[APIView], view):
    """`view` (a Django view) as drf-spectacular sees `endpoint`: DRF's own marks of a DRF
    view's callable (`cls`, `initkwargs`), read only by the schema generator."""
    view.cls, view.initkwargs = endpoint, {}
    return view


# What the 429 headers mean here: the budget is per client IP and endpoint, not per credential.
_RATE_LIMIT_HEADER_DESCRIPTIONS = {
    "Retry-After": "Seconds to wait before retrying.",
    "X-RateLimit-Limit": "Requests per minute from one client IP to this endpoint.",
    "X-RateLimit-Remaining": "Requests left in the current window (0).",
    "X-RateLimit-Reset": "Seconds until the current window ends.",
}
RATE_LIMIT_HEADERS = [copy.copy(header) for header in RATE_LIMIT_RESPONSE_HEADERS]
for _header in RATE_LIMIT_HEADERS:
    _header.description = _RATE_LIMIT_HEADER_DESCRIPTIONS[_header.name]


class ProtocolSchema(RequiredBodySchema):
    """The `oauth` tag and the 429 headers of the protocol endpoints' budget; no added 413
    envelope (each operation declares its own 413)."""

    _get_response_bodies = AutoSchema._get_response_bodies

    def get_tags(self):
        return ["oauth"]

    def get_override_parameters(self):
        return [*AutoSchema.get_override_parameters(self), *RATE_LIMIT_HEADERS]

    def _get_request_body(self, direction="request"):
        """DELETE's too: the consent refusal has a form body (drf-spectacular describes the
        bodies of PUT, PATCH and POST only), required like POST's."""
        method = self.method
        self.method = "POST" if method == "DELETE" else method
        try:
            return super()._get_request_body(direction)
        finally:
            self.method = method


class ProtocolEndpoint(APIView):
    schema = ProtocolSchema()
    authentication_classes = []
    permission_classes = [AllowAny]


def oauth_error(
    description: str, *, html: bool = False, status: int = 400, body=OAuthErrorSerializer
) -> dict:
    """`{error, error_description}` (or another `body`); the authorization endpoint shows it as
    a page instead when the request's Accept contains text/html (a browser)."""
    error = OpenApiResponse(body, description=description)
    if not html:
        return {status: error}
    return {(status, "application/json"): error, (status, HTML): OpenApiResponse(OpenApiTypes.STR)}


def header(name: str, schema, statuses, description: str = "") -> OpenApiParameter:
    return OpenApiParameter(
        name,
        schema,
        OpenApiParameter.HEADER,
        response=statuses,
        required=True,
        description=description,
    )


NO_STORE = {"type": "string", "enum": ["no-store"]}
# 429 and 500 are the business envelope on every protocol endpoint (spec "Errors" 3).
COMMON_ERRORS = {429: ERROR, 500: ERROR}
# Every OAuth endpoint's, the consent form's too (core.api.middleware).
TOO_LARGE = oauth_error("`invalid_request`: the body is over 2.5 MiB.", status=413)
# 400 is also the envelope's `bad_request` when Django cannot parse the form body at all (a
# multipart body without a boundary), before the view runs. Written as a schema: DRF has no
# serializer for "one of two bodies" that stays inline.
MALFORMED_OR_PROTOCOL_ERROR = {
    "oneOf": [
        {"$ref": "#/components/schemas/OAuthError"},
        {"$ref": "#/components/schemas/ErrorEnvelope"},
    ]
}

# Example values (spec "Discovery and OAuth protocol", docs/api/oauth.md): made up, in the
# shapes the endpoints issue and accept.
EXAMPLE_STATE = "st-5b1f9c2a"
EXAMPLE_AUTH_TOKEN = "a3f1c9e7b5d2468097ab1cd2ef3456789"
EXAMPLE_CSRF_TOKEN = "kE3nR8sT1vW6yZ0bD4fH7jL2mP5qS9uXaC3eG6iK8oM1rT4vY7zB0dF2hJ5lN8pQ"
EXAMPLE_REFRESH_TOKEN = "Rt4kP9zW2qL7xN3mV8cJ5yB1hD6fG0sA"


def form_example(name: str, value: dict) -> OpenApiExample:
    return OpenApiExample(name, value=value, request_only=True, media_type=FORM)
