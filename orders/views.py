from drf_spectacular.utils import extend_schema
from rest_framework.views import APIView

from config.api.pagination import LaravelPagination
from config.api.schema import (
    PAGINATION_PARAMETERS,
    STORE_HEADER_PARAMETER,
    error_responses,
    paginated_envelope,
)
from orders.selectors import orders_of_store
from orders.serializers import InvoiceV1Serializer, InvoiceV2Serializer
from stores.access import ApiKeyOnly, StorePermission


def _invoice_page(request, serializer_class):
    paginator = LaravelPagination()
    page = paginator.paginate_queryset(orders_of_store(store=request.store), request)
    return paginator.get_paginated_response(serializer_class(page, many=True).data)


class InvoiceListV1View(APIView):
    permission_classes = [ApiKeyOnly, StorePermission]
    permission_area = "invoice"

    @extend_schema(
        operation_id="v1_invoices_list",
        summary="List invoices (v1)",
        description="The store's orders, newest first, with integer ids. API keys only "
        "(OAuth tokens get 403).",
        parameters=[STORE_HEADER_PARAMETER, *PAGINATION_PARAMETERS],
        responses={
            200: paginated_envelope("InvoiceV1ListResponse", InvoiceV1Serializer),
            **error_responses(403, 422),
        },
    )
    def get(self, request):
        return _invoice_page(request, InvoiceV1Serializer)


class InvoiceListV2View(APIView):
    permission_classes = [StorePermission]
    permission_area = "invoice"

    @extend_schema(
        operation_id="v2_invoices_list",
        summary="List invoices",
        description="The store's orders, newest first, with string ids.",
        parameters=[STORE_HEADER_PARAMETER, *PAGINATION_PARAMETERS],
        responses={
            200: paginated_envelope("InvoiceV2ListResponse", InvoiceV2Serializer),
            **error_responses(403, 422),
        },
    )
    def get(self, request):
        return _invoice_page(request, InvoiceV2Serializer)
