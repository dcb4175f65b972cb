from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.response import Response

from accounts.abilities import ACCOUNT_READ
from accounts.permissions import HasAbility
from accounts.serializers import ME_EXAMPLE, MeSerializer
from core.api.schema import data_envelope, error_responses, response_example


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
