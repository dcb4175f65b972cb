"""v1 coupon endpoints (spec "Coupons (v1)"): API keys only, scoped to the resolved store."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.pagination import LaravelPagination
from config.api.schema import STORE_HEADER_PARAMETER, RequiredBodySchema, error_responses
from coupons.filters import CouponListFilter
from coupons.selectors import TRASHED_WITH, coupon_get, coupon_list
from coupons.serializers import (
    CouponCreateRequest,
    CouponSerializer,
    CouponUpdateInputSerializer,
)
from coupons.services import coupon_create, coupon_delete, coupon_update
from stores.access import ApiKeyOnly, StorePermission


def _trashed_parameter(name: str, description: str) -> OpenApiParameter:
    return OpenApiParameter(
        name,
        {"type": "string", "enum": ["true", "false", "1", "0"]},
        OpenApiParameter.QUERY,
        required=False,
        description=f"{description} Exactly true, false, 1 or 0; anything else is a 422.",
    )


class CouponListCreateView(GenericAPIView):
    permission_classes = [ApiKeyOnly, StorePermission]
    permission_area = "coupon"
    pagination_class = LaravelPagination
    serializer_class = CouponSerializer
    schema = RequiredBodySchema()

    @extend_schema(
        operation_id="coupons_list",
        summary="List the store's coupons, oldest first (id order)",
        parameters=[
            STORE_HEADER_PARAMETER,
            _trashed_parameter("with_trashed", "Include deleted coupons."),
            _trashed_parameter("only_trashed", "Only deleted coupons (wins over with_trashed)."),
        ],
        responses={200: CouponSerializer(many=True), **error_responses(403, 422)},
    )
    def get(self, request):
        every_coupon = coupon_list(store=request.store, trashed=TRASHED_WITH)
        coupons = CouponListFilter(request.query_params, queryset=every_coupon).qs
        page = self.paginate_queryset(coupons)
        return self.get_paginated_response(CouponSerializer(page, many=True).data)

    @extend_schema(
        operation_id="coupons_create",
        summary="Create a coupon",
        parameters=[STORE_HEADER_PARAMETER],
        request=CouponCreateRequest,
        responses={201: CouponSerializer, **error_responses(403, 415, 422)},
    )
    def post(self, request):
        coupon = coupon_create(store=request.store, fields=request.data)
        return Response(CouponSerializer(coupon).data, status=status.HTTP_201_CREATED)


class CouponDetailView(APIView):
    permission_classes = [ApiKeyOnly, StorePermission]
    permission_area = "coupon"

    @extend_schema(
        operation_id="coupons_retrieve",
        summary="A live coupon of the store",
        parameters=[STORE_HEADER_PARAMETER],
        responses={200: CouponSerializer, **error_responses(403, 404)},
    )
    def get(self, request, id: int):  # path parameter named as in the spec
        coupon = coupon_get(store=request.store, coupon_id=id)
        return Response(CouponSerializer(coupon).data)

    @extend_schema(
        operation_id="coupons_update",
        summary="Change some fields of a live coupon",
        parameters=[STORE_HEADER_PARAMETER],
        request=CouponUpdateInputSerializer,
        responses={200: CouponSerializer, **error_responses(403, 404, 415, 422)},
    )
    def patch(self, request, id: int):
        coupon = coupon_get(store=request.store, coupon_id=id)
        coupon = coupon_update(coupon=coupon, fields=request.data)
        return Response(CouponSerializer(coupon).data)

    @extend_schema(
        operation_id="coupons_destroy",
        summary="Soft-delete a coupon (204); it then answers 404 and frees its code",
        parameters=[STORE_HEADER_PARAMETER],
        request=None,
        responses={204: None, **error_responses(403, 404)},
    )
    def delete(self, request, id: int):
        coupon_delete(coupon=coupon_get(store=request.store, coupon_id=id))
        return Response(status=status.HTTP_204_NO_CONTENT)
