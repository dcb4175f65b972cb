from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.abilities import ACCOUNT_READ, ROLE_PERMISSIONS
from accounts.serializers import MeSerializer, PermissionsSerializer
from config.api.schema import STORE_HEADER_PARAMETER, data_envelope, error_responses
from stores.access import HasAbility, StorePermission, resolve_store_context


class MeView(APIView):
    permission_classes = [HasAbility]
    required_abilities = {"GET": ACCOUNT_READ}

    @extend_schema(
        operation_id="me_retrieve",
        responses={200: data_envelope("MeResponse", MeSerializer), **error_responses(403)},
    )
    def get(self, request):
        user = request.user
        return Response(
            {
                "data": MeSerializer(
                    {
                        "id": str(user.pk),
                        "username": user.username,
                        "email": user.email,
                        "credential_type": request.auth.type,
                    }
                ).data
            }
        )


class PermissionsView(APIView):
    permission_classes = [StorePermission]
    # Any valid credential with a resolvable store may ask what it may do (docs/decisions.md).
    permission_area = None

    @extend_schema(
        operation_id="permissions_retrieve",
        parameters=[STORE_HEADER_PARAMETER],
        responses={
            200: data_envelope("PermissionsResponse", PermissionsSerializer),
            **error_responses(403),
        },
    )
    def get(self, request):
        context = resolve_store_context(request)
        credential = request.auth
        return Response(
            {
                "data": PermissionsSerializer(
                    {
                        "credential_type": credential.type,
                        "key_abilities": sorted(credential.abilities),
                        "store_access": credential.store_access,
                        "store_permissions": sorted(ROLE_PERMISSIONS[context.membership.role]),
                        "effective_abilities": sorted(context.effective_abilities),
                    }
                ).data
            }
        )
