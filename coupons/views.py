"""v1 coupon endpoints (spec "Coupons (v1)"): API keys only, scoped to the resolved store."""

from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status
from rest_framework.response import Response
from rest_framework.viewsets import GenericViewSet

from config.api.idempotency import idempotent
from config.api.pagination import LaravelPagination
from config.api.schema import RequiredBodySchema, error_responses, response_example
from coupons.filters import CouponListFilter
from coupons.models import Coupon
from coupons.selectors import LISTED_COUPONS, coupon_get
from coupons.serializers import (
    COUPON_AMOUNT_CREATE_EXAMPLE,
    COUPON_CREATE_EXAMPLE,
    COUPON_EXAMPLE,
    COUPON_UPDATE_EXAMPLE,
    CouponCreateRequest,
    CouponSerializer,
    CouponWriteSerializer,
)
from coupons.services import coupon_create, coupon_delete, coupon_update
from stores.access import ApiKeyOnly, StorePermission

# The router's path regex would give `id` the schema of a string of digits; the spec says integer.
COUPON_ID_PARAMETER = OpenApiParameter("id", int, OpenApiParameter.PATH)


@extend_schema_view(
    list=extend_schema(
        operation_id="coupons_list",
        summary="List the store's coupons, oldest first (id order)",
        description="A Laravel-style page of the store's live coupons; `with_trashed=true` adds "
        "the soft-deleted ones, `only_trashed=true` lists only them. API keys only (v1).",
        responses={200: CouponSerializer(many=True), **error_responses(403, 422)},
    ),
    create=extend_schema(
        operation_id="coupons_create",
        summary="Create a coupon",
        description="A percentage or amount coupon; its code must be unused among the store's "
        "live coupons (422 on `code` otherwise). API keys only (v1).",
        request=CouponCreateRequest,
        responses={201: CouponSerializer, **error_responses(403, 409, 415, 422)},
        examples=[
            OpenApiExample("Percentage", value=COUPON_CREATE_EXAMPLE, request_only=True),
            OpenApiExample("Amount", value=COUPON_AMOUNT_CREATE_EXAMPLE, request_only=True),
            response_example("Created", COUPON_EXAMPLE, 201),
        ],
    ),
    retrieve=extend_schema(
        operation_id="coupons_retrieve",
        parameters=[COUPON_ID_PARAMETER],
        summary="A live coupon of the store",
        description="A soft-deleted coupon, or another store's, is a 404. API keys only (v1).",
        responses={200: CouponSerializer, **error_responses(403, 404)},
    ),
    partial_update=extend_schema(
        operation_id="coupons_update",
        parameters=[COUPON_ID_PARAMETER],
        summary="Change some fields of a live coupon",
        description="Only the fields sent change; the result is checked as a whole (422). A "
        "code already used by a live coupon is a 422 on `code`. API keys only (v1).",
        request=CouponWriteSerializer(partial=True),
        responses={200: CouponSerializer, **error_responses(403, 404, 409, 415, 422)},
        examples=[
            OpenApiExample(
                "New discount and expiry", value=COUPON_UPDATE_EXAMPLE, request_only=True
            ),
            response_example("Updated", {**COUPON_EXAMPLE, **COUPON_UPDATE_EXAMPLE}),
        ],
    ),
    destroy=extend_schema(
        operation_id="coupons_destroy",
        parameters=[COUPON_ID_PARAMETER],
        summary="Soft-delete a coupon (204); it then answers 404 and frees its code",
        description="The coupon stays listed with `with_trashed` / `only_trashed` but can no "
        "longer be read, changed or applied. API keys only (v1).",
        request=None,
        responses={204: None, **error_responses(403, 404, 409, 422)},
    ),
)
class CouponViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, GenericViewSet):
    # No `update` action: PUT on a coupon is a 405 (the spec has PATCH only).
    permission_classes = [ApiKeyOnly, StorePermission]
    permission_area = "coupon"
    queryset = LISTED_COUPONS  # every coupon as listed, in id order
    serializer_class = CouponSerializer
    filter_backends = [DjangoFilterBackend]
    filterset_class = CouponListFilter
    pagination_class = LaravelPagination.documented_at("/api/v1/coupons")
    lookup_url_kwarg = "id"  # the spec's path parameter name
    lookup_value_regex = "[0-9]+"
    schema = RequiredBodySchema()

    def get_queryset(self):
        return self.queryset.of_store(self.request.store)

    def get_object(self) -> Coupon:
        return coupon_get(store=self.request.store, coupon_id=int(self.kwargs["id"]))

    @idempotent(operation="coupons.create", replayed_statuses=[201, 422])
    def create(self, request):
        body = CouponWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        coupon = coupon_create(store=request.store, **body.validated_data)
        return Response(CouponSerializer(coupon).data, status=status.HTTP_201_CREATED)

    @idempotent(operation="coupons.update", replayed_statuses=[200, 404, 422])
    def partial_update(self, request, id: str):
        coupon = self.get_object()
        body = CouponWriteSerializer(coupon, data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        coupon = coupon_update(coupon=coupon, changes=body.validated_data)
        return Response(CouponSerializer(coupon).data)

    @idempotent(operation="coupons.delete", replayed_statuses=[204, 404])
    def destroy(self, request, id: str):
        coupon_delete(coupon=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
