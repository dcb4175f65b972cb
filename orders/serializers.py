from rest_framework import serializers

from orders.models import Order

INVOICE_FIELDS = ["id", "status", "total_cents", "currency", "created_at"]


class InvoiceV1Serializer(serializers.ModelSerializer):
    """v1: bare integer ids."""

    class Meta:
        model = Order
        fields = INVOICE_FIELDS
        read_only_fields = INVOICE_FIELDS


class InvoiceV2Serializer(InvoiceV1Serializer):
    """v2: identifiers are strings."""

    id = serializers.CharField(read_only=True)

    class Meta(InvoiceV1Serializer.Meta):
        pass
