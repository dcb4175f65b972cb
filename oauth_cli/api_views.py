"""v2 `/oauth/installation`: the CLI connection of the user behind the OAuth token."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.permissions import BasePermission
from rest_framework.response import Response

from accounts.credentials import CREDENTIAL_OAUTH
from core.api.errors import Forbidden, NotFound
from core.api.schema import data_envelope, error_responses, response_example
from oauth_cli.selectors import cli_installation_for
from oauth_cli.serializers import INSTALLATION_EXAMPLE, InstallationSerializer
from oauth_cli.services import installation_revoke


class OAuthOnly(BasePermission):
    """The installation belongs to an OAuth connection; API keys get 403."""

    def has_permission(self, request, view):
        if request.auth is None:
            return False
        if request.auth.type != CREDENTIAL_OAUTH:
            raise Forbidden("This endpoint needs an OAuth access token of the CLI.")
        return True


class InstallationViewSet(viewsets.GenericViewSet):
    """A singleton: the one installation of the user behind the token (no X-STORE)."""

    singleton = True
    permission_classes = [OAuthOnly]
    serializer_class = InstallationSerializer

    def get_object(self):
        installation = cli_installation_for(user_id=self.request.user.pk)
        if installation is None:
            raise NotFound()
        return installation

    @extend_schema(
        operation_id="oauth_installation_retrieve",
        summary="The CLI's connection to the account",
        responses={
            200: data_envelope("InstallationResponse", InstallationSerializer),
            **error_responses(403, 404),
        },
        examples=[response_example("Installation", {"data": INSTALLATION_EXAMPLE})],
        description="The CLI connection (grant model `account`, scope `admin`) of the user "
        "behind the OAuth access token. No X-STORE. API keys get 403.",
    )
    def retrieve(self, request):
        return Response({"data": self.get_serializer(self.get_object()).data})

    @extend_schema(
        operation_id="oauth_installation_destroy",
        summary="Disconnect the CLI",
        responses={
            204: OpenApiResponse(description="Disconnected: codes and all token families revoked."),
            **error_responses(403, 404),
        },
        description="Disconnects the CLI: revokes its pending codes and every token family. "
        "The access token used for this request stops working at once.",
    )
    def destroy(self, request):
        installation_revoke(installation_id=self.get_object().pk)
        return Response(status=status.HTTP_204_NO_CONTENT)
