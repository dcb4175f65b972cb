from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from core.api.schema import response_example
from orders.models import Order

INVOICE_FIELDS = ["id", "status", "total_cents", "currency", "created_at"]
# OpenAPI example of an invoice (the item of the v1 and v2 list examples).
INVOICE_EXAMPLE = {
    "id": 1001,
    "status": "completed",
    "total_cents": 4599,
    "currency": "EUR",
    "created_at": "2026-06-02T14:05:00Z",
}


@extend_schema_serializer(examples=[response_example("Invoice", INVOICE_EXAMPLE)])
class InvoiceV1Serializer(serializers.ModelSerializer):
    """v1: bare integer ids."""

    class Meta:
        model = Order
        fields = INVOICE_FIELDS
        read_only_fields = INVOICE_FIELDS


@extend_schema_serializer(
    examples=[response_example("Invoice", {**INVOICE_EXAMPLE, "id": str(INVOICE_EXAMPLE["id"])})]
)
class InvoiceV2Serializer(InvoiceV1Serializer):
    """v2: identifiers are strings."""

    id = serializers.CharField(read_only=True)
