"""The v1 coupon resource (spec "Coupon (v1)") and the documented request bodies.

Request bodies are checked by coupons/validation.py (strict JSON types, merged state);
the input serializers below only describe them in the OpenAPI schema.
"""

from datetime import UTC, datetime

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from coupons.models import MAX_INTEGER, Coupon


class CouponSerializer(serializers.ModelSerializer):
    """The bare v1 coupon: integer ids, every field present (null where unset), UTC `Z` times."""

    store_id = serializers.IntegerField(read_only=True)

    class Meta:
        model = Coupon
        fields = [
            "id",
            "code",
            "type",
            "discount",
            "limit",
            "store_wide",
            "minimum_amount",
            "expires_at",
            "created_at",
            "updated_at",
            "store_id",
            "deleted_at",
        ]
        read_only_fields = fields

    def to_representation(self, coupon: Coupon) -> dict:
        # Hand-written for list speed (DRF's per-field machinery is ~10x slower); the declared
        # fields above still define the schema, and tests compare the two.
        return {
            "id": coupon.id,
            "code": coupon.code,
            "type": coupon.type,
            "discount": coupon.discount,
            "limit": coupon.limit,
            "store_wide": coupon.store_wide,
            "minimum_amount": coupon.minimum_amount,
            "expires_at": utc_timestamp(coupon.expires_at),
            "created_at": utc_timestamp(coupon.created_at),
            "updated_at": utc_timestamp(coupon.updated_at),
            "store_id": coupon.store_id,
            "deleted_at": utc_timestamp(coupon.deleted_at),
        }


def utc_timestamp(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with `Z`, as DRF's DateTimeField renders it."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _integer(minimum: int, **kwargs):
    return serializers.IntegerField(min_value=minimum, max_value=MAX_INTEGER, **kwargs)


class CouponCreateInputSerializer(serializers.Serializer):
    code = serializers.RegexField(r"^[A-Za-z0-9_-]{1,64}$", max_length=64)
    type = serializers.ChoiceField(choices=Coupon.TYPE_CHOICES)
    discount = _integer(1, help_text="1 to 100 for PERCENTAGE; whole dollars for AMOUNT.")
    store_wide = serializers.BooleanField()
    limit = _integer(1, required=False, allow_null=True)
    minimum_amount = _integer(0, required=False, allow_null=True, help_text="Whole dollars.")
    expires_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="ISO 8601 with a time zone (`Z` or `±hh:mm`), in the future and at most "
        "9999-12-31T23:59:59Z once converted to UTC (so 9999-12-31T23:59:59-01:00 is refused); "
        "stored and returned in UTC.",
    )


class CouponPercentageCreateInputSerializer(CouponCreateInputSerializer):
    type = serializers.ChoiceField(choices=[Coupon.TYPE_PERCENTAGE])
    discount = serializers.IntegerField(min_value=1, max_value=100, help_text="A percentage.")


class CouponAmountCreateInputSerializer(CouponCreateInputSerializer):
    type = serializers.ChoiceField(choices=[Coupon.TYPE_AMOUNT])
    discount = _integer(1, help_text="Whole dollars.")


# The create body as the schema states it: the discount range depends on the type.
CouponCreateRequest = PolymorphicProxySerializer(
    component_name="CouponCreate",
    serializers={
        Coupon.TYPE_PERCENTAGE: CouponPercentageCreateInputSerializer,
        Coupon.TYPE_AMOUNT: CouponAmountCreateInputSerializer,
    },
    resource_type_field_name="type",
)


class CouponUpdateInputSerializer(CouponCreateInputSerializer):
    """Any subset of the create fields; the merged coupon must satisfy every rule."""

    def get_fields(self):
        fields = super().get_fields()
        for field in fields.values():
            field.required = False
        return fields
