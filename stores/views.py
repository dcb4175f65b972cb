from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.abilities import ACCOUNT_READ, STORES_CREATE
from config.api.errors import NotFound
from config.api.idempotency import idempotency_key_from, idempotent_response
from config.api.pagination import LaravelPagination
from config.api.schema import (
    PAGINATION_PARAMETERS,
    data_envelope,
    error_responses,
    idempotency_key_parameter,
    paginated_envelope,
)
from stores.access import HasAbility
from stores.selectors import stores_accessible
from stores.serializers import StoreCreatedSerializer, StoreCreateInputSerializer, StoreSerializer
from stores.services import store_create

IDEMPOTENT_REPLAYED_HEADER = OpenApiParameter(
    "Idempotent-Replayed",
    str,
    OpenApiParameter.HEADER,
    enum=["true"],
    # Stored outcomes are the 201 and a 422 of the body; the other errors happen before the
    # key is claimed (or, 429 and 5xx, are not stored).
    response=[201, 422],
    required=False,
    description="`true` when this is the stored response of an earlier request with the same "
    "Idempotency-Key; absent on the first execution.",
)


class StoreListCreateView(APIView):
    permission_classes = [HasAbility]
    required_abilities = {"GET": ACCOUNT_READ, "POST": STORES_CREATE}

    @extend_schema(
        operation_id="stores_list",
        parameters=PAGINATION_PARAMETERS,
        responses={
            200: paginated_envelope("StoreListResponse", StoreSerializer),
            **error_responses(403, 422),
        },
    )
    def get(self, request):
        paginator = LaravelPagination()
        page = paginator.paginate_queryset(stores_accessible(credential=request.auth), request)
        return paginator.get_paginated_response(StoreSerializer(page, many=True).data)

    @extend_schema(
        operation_id="stores_create",
        request=StoreCreateInputSerializer,
        parameters=[
            idempotency_key_parameter(required=True, min_length=1),
            IDEMPOTENT_REPLAYED_HEADER,
        ],
        responses={
            201: data_envelope("StoreCreatedResponse", StoreCreatedSerializer),
            **error_responses(403, 409, 415, 422),
        },
    )
    def post(self, request):
        key = idempotency_key_from(request, required=True, min_length=1)

        def create():
            payload = StoreCreateInputSerializer(data=request.data)
            payload.is_valid(raise_exception=True)
            store = store_create(user=request.user, **payload.validated_data)
            return Response(
                {"data": StoreCreatedSerializer(store).data}, status=status.HTTP_201_CREATED
            )

        return idempotent_response(request, operation="stores.create", key=key, run=create)


class StoreDetailView(APIView):
    permission_classes = [HasAbility]
    required_abilities = {"GET": ACCOUNT_READ}

    @extend_schema(
        operation_id="stores_retrieve",
        responses={
            200: data_envelope("StoreResponse", StoreSerializer),
            **error_responses(403, 404),
        },
    )
    def get(self, request, store: int):
        store = stores_accessible(credential=request.auth).filter(pk=store).first()
        if store is None:
            raise NotFound()
        return Response({"data": StoreSerializer(store).data})
