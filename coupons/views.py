"""Coupon endpoints (spec "Coupons (v1)"): v1 for API keys with bare single coupons,
v2 for API keys and OAuth tokens (X-STORE) with `{"data": coupon}`; both scoped to the resolved
store. Their schema is coupons/schema.py."""

from django_filters.rest_framework import DjangoFilterBackend
from django_filters.utils import translate_validation
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.viewsets import GenericViewSet

from core.api.idempotency import idempotent
from core.api.pagination import LaravelPagination
from coupons import bodies
from coupons.filters import CouponListFilter
from coupons.models import Coupon
from coupons.schema import (
    BATCH_DELETE_SCHEMA,
    BATCH_UPDATE_SCHEMA,
    CouponSchema,
    CouponV2Schema,
    coupon_schema,
)
from coupons.selectors import (
    LISTED_COUPONS,
    TRASHED_WITHOUT,
    coupon_get,
    coupon_search,
    coupons_get_many,
)
from coupons.serializers import CouponSerializer, CouponWriteSerializer
from coupons.services import (
    coupon_batch_create,
    coupon_batch_delete,
    coupon_batch_update,
    coupon_create,
    coupon_delete,
    coupon_replace,
    coupon_update,
)
from stores.access import ApiKeyOnly, StorePermission


@coupon_schema(version=1)
class CouponViewSet(mixins.ListModelMixin, GenericViewSet):
    permission_classes = [ApiKeyOnly, StorePermission]
    permission_area = "coupon"
    read_actions = ("search",)  # a POST that reads: coupon:read is enough
    queryset = LISTED_COUPONS  # every coupon as listed, in id order
    serializer_class = CouponSerializer
    filter_backends = [DjangoFilterBackend]
    filterset_class = CouponListFilter
    pagination_class = LaravelPagination.documented_at("/api/v1/coupons")
    lookup_url_kwarg = "id"  # the spec's path parameter name
    lookup_value_regex = "[0-9]+"
    schema = CouponSchema()

    def get_queryset(self):
        return self.queryset.of_store(self.request.store)

    def get_object(self, trashed: str = TRASHED_WITHOUT) -> Coupon:
        """The path's coupon: live, unless a read asks `trashed` (writes reach live ones only)."""
        return coupon_get(
            store=self.request.store, coupon_id=int(self.kwargs["id"]), trashed=trashed
        )

    def one(self, coupon: Coupon, status: int = status.HTTP_200_OK) -> Response:
        """A single coupon as this version answers it: v1's bare object."""
        return Response(CouponSerializer(coupon).data, status=status)

    def many(self, coupons: list[Coupon], status: int = status.HTTP_200_OK) -> Response:
        return Response({"data": CouponSerializer(coupons, many=True).data}, status=status)

    @idempotent(operation="coupons.create", replayed_statuses=[201, 422])
    def create(self, request):
        body = CouponWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        coupon = coupon_create(store=request.store, **body.validated_data)
        return self.one(coupon, status.HTTP_201_CREATED)

    def retrieve(self, request, id: str):
        # `with_trashed` / `only_trashed` as the list reads them, so a coupon listed with them
        # can be read (as Laravel Orion's show).
        return self.one(self.get_object(trashed=self.trashed()))

    def trashed(self) -> str:
        """What the query's `with_trashed` and `only_trashed` ask for; malformed: a 422."""
        listing = DjangoFilterBackend().get_filterset(self.request, self.get_queryset(), self)
        if not listing.is_valid():
            raise translate_validation(listing.errors)
        return listing.trashed()

    @idempotent(operation="coupons.replace", replayed_statuses=[200, 404, 422])
    def update(self, request, id: str):
        coupon = self.get_object()
        body = CouponWriteSerializer(coupon, data=request.data)
        body.is_valid(raise_exception=True)
        return self.one(coupon_replace(coupon=coupon, values=body.validated_data))

    @idempotent(operation="coupons.update", replayed_statuses=[200, 404, 422])
    def partial_update(self, request, id: str):
        coupon = self.get_object()
        body = CouponWriteSerializer(coupon, data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        return self.one(coupon_update(coupon=coupon, changes=body.validated_data))

    @idempotent(operation="coupons.delete", replayed_statuses=[204, 404])
    def destroy(self, request, id: str):
        coupon_delete(coupon=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @action(detail=False, methods=["post"], url_path="search")
    def search(self, request):
        """The list's queryset, FilterSet (with_trashed, only_trashed as query parameters) and
        paginator, narrowed and ordered by the body."""
        search = bodies.search_body(request.data)
        coupons = coupon_search(
            self.get_queryset(), store=request.store, trashed=self.trashed(), search=search
        )
        page = self.paginate_queryset(coupons)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    @action(detail=False, methods=["post"], url_path="batch")
    @idempotent(operation="coupons.batch_create", replayed_statuses=[201, 422])
    def batch_create(self, request):
        resources = bodies.batch_create_resources(request.data)
        coupons = coupon_batch_create(store=request.store, resources=resources)
        return self.many(coupons, status.HTTP_201_CREATED)

    @batch_create.mapping.patch
    @BATCH_UPDATE_SCHEMA
    @idempotent(operation="coupons.batch_update", replayed_statuses=[200, 422])
    def batch_update(self, request):
        keyed_ids = bodies.batch_update_ids(request.data)
        coupons = coupons_get_many(store=request.store, keyed_ids=keyed_ids)
        resources = bodies.batch_update_resources(request.data, coupons)
        return self.many(coupon_batch_update(store=request.store, resources=resources))

    @batch_create.mapping.delete
    @BATCH_DELETE_SCHEMA
    @idempotent(operation="coupons.batch_delete", replayed_statuses=[200, 422])
    def batch_delete(self, request):
        coupon_ids = bodies.batch_delete_ids(request.data)
        return self.many(coupon_batch_delete(store=request.store, coupon_ids=coupon_ids))


@coupon_schema(version=2)
class CouponV2ViewSet(CouponViewSet):
    """v2: API keys as on v1, and OAuth tokens with X-STORE (stores.access.StorePermission);
    single coupons in `data`, and a deletion answers the deleted coupon."""

    permission_classes = [StorePermission]
    pagination_class = LaravelPagination.documented_at("/api/v2/coupons")
    schema = CouponV2Schema()

    def one(self, coupon: Coupon, status: int = status.HTTP_200_OK) -> Response:
        return Response({"data": CouponSerializer(coupon).data}, status=status)

    @idempotent(operation="coupons.delete", replayed_statuses=[200, 404])
    def destroy(self, request, id: str):
        return self.one(coupon_delete(coupon=self.get_object()))
