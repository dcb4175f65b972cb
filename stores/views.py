from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status, viewsets
from rest_framework.response import Response

from accounts.abilities import ACCOUNT_READ, ROLE_PERMISSIONS, STORES_CREATE
from accounts.permissions import HasAbility
from core.api.idempotency import idempotent
from core.api.pagination import WholeListPagination
from core.api.schema import data_envelope, error_responses, response_example
from stores.access import StorePermission, resolve_store_context
from stores.models import Store
from stores.selectors import stores_accessible
from stores.serializers import (
    PERMISSIONS_EXAMPLE,
    STORE_CREATE_EXAMPLE,
    STORE_CREATED_EXAMPLE,
    STORE_EXAMPLE,
    PermissionsSerializer,
    StoreCreatedSerializer,
    StoreCreateSerializer,
    StoreSerializer,
)
from stores.services import store_create


@extend_schema_view(
    list=extend_schema(
        operation_id="stores_list",
        summary="List the stores the credential can access",
        responses={
            200: data_envelope("StoreListResponse", StoreSerializer, many=True),
            **error_responses(403),
        },
        examples=[response_example("Stores", {"data": [STORE_EXAMPLE]})],
    )
)
class StoreViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Stores of the credential's user (narrowed to the key's selected stores, if any)."""

    permission_classes = [HasAbility]
    required_abilities = {"GET": ACCOUNT_READ, "POST": STORES_CREATE}
    serializer_class = StoreSerializer
    lookup_url_kwarg = "store"
    lookup_value_regex = "[0-9]+"
    # Every accessible store, unfiltered (docs/design.md "Pagination").
    pagination_class = WholeListPagination

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no credential
            return Store.objects.none()
        return stores_accessible(credential=self.request.auth)

    def get_serializer_class(self):
        return StoreCreateSerializer if self.action == "create" else StoreSerializer

    @extend_schema(
        operation_id="stores_create",
        summary="Create a store (requires an Idempotency-Key)",
        responses={
            201: data_envelope("StoreCreatedResponse", StoreCreatedSerializer),
            **error_responses(403, 409, 415, 422),
        },
        examples=[
            OpenApiExample("New store", value=STORE_CREATE_EXAMPLE, request_only=True),
            response_example("Created", {"data": STORE_CREATED_EXAMPLE}, 201),
        ],
    )
    @idempotent(
        operation="stores.create", replayed_statuses=[201, 422], required=True, min_length=1
    )
    def create(self, request):
        payload = self.get_serializer(data=request.data)
        payload.is_valid(raise_exception=True)
        store = store_create(user=request.user, **payload.validated_data)
        return Response(
            {"data": StoreCreatedSerializer(store).data}, status=status.HTTP_201_CREATED
        )

    @extend_schema(
        operation_id="stores_retrieve",
        summary="A store the credential can access",
        # The path converter's type: drf-spectacular types a regex lookup as a string.
        parameters=[OpenApiParameter("store", OpenApiTypes.INT, OpenApiParameter.PATH)],
        responses={
            200: data_envelope("StoreResponse", StoreSerializer),
            **error_responses(403, 404),
        },
        examples=[response_example("Store", {"data": STORE_EXAMPLE})],
    )
    def retrieve(self, request, store: str):
        return Response({"data": StoreSerializer(self.get_object()).data})


class PermissionsViewSet(viewsets.GenericViewSet):
    """GET /api/v2/permissions: what the credential may do in the selected store."""

    singleton = True
    permission_classes = [StorePermission]
    # Any valid credential with a resolvable store may ask what it may do
    # (docs/decisions/foundation.md "Abilities and permissions").
    permission_area = None
    serializer_class = PermissionsSerializer

    @extend_schema(
        operation_id="permissions_retrieve",
        summary="What the credential may do in the selected store",
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
