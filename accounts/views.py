from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.response import Response

from accounts.abilities import ACCOUNT_READ, ROLE_PERMISSIONS
from accounts.serializers import (
    ME_EXAMPLE,
    PERMISSIONS_EXAMPLE,
    MeSerializer,
    PermissionsSerializer,
)
from config.api.schema import (
    STORE_HEADER_PARAMETER,
    data_envelope,
    error_responses,
    response_example,
)
from stores.access import HasAbility, StorePermission, resolve_store_context


class MeViewSet(viewsets.GenericViewSet):
    """GET /api/v2/me: the user behind the credential."""

    singleton = True
    permission_classes = [HasAbility]
    required_abilities = {"GET": ACCOUNT_READ}
    serializer_class = MeSerializer

    @extend_schema(
        operation_id="me_retrieve",
        summary="The account behind the credential",
        responses={200: data_envelope("MeResponse", MeSerializer), **error_responses(403)},
        examples=[response_example("Me", {"data": ME_EXAMPLE})],
    )
    def retrieve(self, request):
        me = {"user": request.user, "credential": request.auth}
        return Response({"data": self.get_serializer(me).data})


class PermissionsViewSet(viewsets.GenericViewSet):
    """GET /api/v2/permissions: what the credential may do in the selected store."""

    singleton = True
    permission_classes = [StorePermission]
    # Any valid credential with a resolvable store may ask what it may do (docs/decisions.md).
    permission_area = None
    serializer_class = PermissionsSerializer

    @extend_schema(
        operation_id="permissions_retrieve",
        summary="What the credential may do in the selected store",
        parameters=[STORE_HEADER_PARAMETER],
        responses={
            200: data_envelope("PermissionsResponse", PermissionsSerializer),
            **error_responses(403),
        },
        examples=[response_example("Permissions", {"data": PERMISSIONS_EXAMPLE})],
    )
    def retrieve(self, request):
        context = resolve_store_context(request)
        permissions = {
            "credential": request.auth,
            "store_context": context,
            "role_permissions": ROLE_PERMISSIONS[context.membership.role],
        }
        return Response({"data": self.get_serializer(permissions).data})
