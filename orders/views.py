import functools

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, viewsets

from core.api.pagination import LaravelPagination
from core.api.schema import error_responses
from events.views import JournalViewSet, journal_schema
from orders.models import Order
from orders.selectors import order_journal_filters
from orders.serializers import InvoiceV1Serializer, InvoiceV2Serializer
from stores.access import ApiKeyOnly, StorePermission


class InvoiceViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """The store's orders as invoices, newest first, in the shared paginated envelope."""

    permission_classes = [StorePermission]
    permission_area = "invoice"
    queryset = Order.objects.order_by("-id")

    def get_queryset(self):
        return super().get_queryset().filter(store=self.request.store)


@extend_schema_view(
    list=extend_schema(
        operation_id="v1_invoices_list",
        summary="List invoices (v1)",
        description="The store's orders, newest first, with integer ids. API keys only "
        "(OAuth tokens get 403).",
        responses={200: InvoiceV1Serializer(many=True), **error_responses(403, 422)},
    )
)
class InvoiceV1ViewSet(InvoiceViewSet):
    permission_classes = [ApiKeyOnly, StorePermission]
    serializer_class = InvoiceV1Serializer
    pagination_class = LaravelPagination.documented_at("/api/v1/invoices")


@extend_schema_view(
    list=extend_schema(
        operation_id="v2_invoices_list",
        summary="List invoices",
        description="The store's orders, newest first, with string ids.",
        responses={200: InvoiceV2Serializer(many=True), **error_responses(403, 422)},
    )
)
class InvoiceV2ViewSet(InvoiceViewSet):
    serializer_class = InvoiceV2Serializer
    pagination_class = LaravelPagination.documented_at("/api/v2/invoices")


@extend_schema_view(
    list=journal_schema(
        operation_id="order_events_list",
        summary="Poll the events of one order",
        description="The event journal restricted to one order of the store (404 for an "
        "unknown order or another store's).",
        statuses=[404],
        # The router's pattern alone would make it a string of digits.
        parameters=[OpenApiParameter("order", int, OpenApiParameter.PATH)],
    )
)
class OrderEventViewSet(JournalViewSet):
    """The event journal (events/views.py) under the filters of one order."""

    @functools.cached_property
    def journal_filters(self) -> dict[str, str]:
        return order_journal_filters(store=self.request.store, order_id=int(self.kwargs["order"]))

    def get_queryset(self):
        return super().get_queryset().filter(**self.journal_filters)
