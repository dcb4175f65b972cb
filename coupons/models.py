from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from django.utils import timezone

from config.list_totals import ListTotals

# PostgreSQL `integer`: the bound of every integer field a client may write.
MAX_INTEGER = 2_147_483_647
# A PERCENTAGE coupon's discount is a percentage: at most this.
PERCENTAGE_MAX_DISCOUNT = 100
PERCENTAGE_DISCOUNT_RULE = (
    f"must be between 1 and {PERCENTAGE_MAX_DISCOUNT} for a PERCENTAGE coupon"
)


class CouponQuerySet(models.QuerySet):
    def of_store(self, store) -> "CouponQuerySet":
        return self.filter(store=store)

    def live(self) -> "CouponQuerySet":
        """Coupons not soft-deleted: the only ones that can be read, changed or applied, and
        whose codes are unique in their store."""
        return self.filter(deleted_at__isnull=True)

    def deleted(self) -> "CouponQuerySet":
        return self.filter(deleted_at__isnull=False)


class Coupon(models.Model):
    """A store's discount code (spec "Coupon (v1)"); deleted coupons keep their row.

    Writes go through coupons/services.py. `discount` is a percentage (PERCENTAGE) or whole
    dollars (AMOUNT); `minimum_amount` is whole dollars.
    """

    TYPE_PERCENTAGE = "PERCENTAGE"
    TYPE_AMOUNT = "AMOUNT"
    TYPE_CHOICES = [(TYPE_PERCENTAGE, "Percentage"), (TYPE_AMOUNT, "Amount")]

    store = models.ForeignKey("stores.Store", on_delete=models.CASCADE, related_name="coupons")
    code = models.CharField(max_length=64)
    type = models.CharField(max_length=16, choices=TYPE_CHOICES)
    discount = models.PositiveIntegerField()
    limit = models.PositiveIntegerField(null=True, blank=True)
    times_used = models.PositiveIntegerField(default=0)
    store_wide = models.BooleanField()
    minimum_amount = models.PositiveIntegerField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    deleted_at = models.DateTimeField(null=True, blank=True)

    objects = CouponQuerySet.as_manager()

    class Meta:
        constraints = [
            # Codes are unique among a store's live coupons, whatever their case; a deleted
            # coupon frees its code.
            models.UniqueConstraint(
                "store",
                Lower("code"),
                condition=Q(deleted_at__isnull=True),
                name="coupon_store_live_code_uniq",
            ),
            models.CheckConstraint(
                condition=Q(type__in=["PERCENTAGE", "AMOUNT"]), name="coupon_type_valid"
            ),
            models.CheckConstraint(
                condition=Q(discount__gte=1)
                & (Q(type="AMOUNT") | Q(discount__lte=PERCENTAGE_MAX_DISCOUNT)),
                name="coupon_discount_in_range",
            ),
            models.CheckConstraint(
                condition=Q(limit__isnull=True) | Q(limit__gte=1), name="coupon_limit_positive"
            ),
        ]
        indexes = [
            # The default list: a store's live coupons in id order.
            models.Index(
                fields=["store", "id"],
                condition=Q(deleted_at__isnull=True),
                name="coupon_store_live_id_idx",
            ),
        ]

    def __str__(self):
        return self.code


class CouponTotal(models.Model):
    """A store's live and deleted coupon counts, the totals of its coupon listings.

    Maintained by PostgreSQL triggers on coupons_coupon in the writer's transaction
    (COUPON_TOTALS, migration 0002); no code writes it but `manage.py recount_lists`. No row
    means the store has no coupons.
    """

    store = models.OneToOneField(
        "stores.Store", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    live = models.BigIntegerField(default=0)
    deleted = models.BigIntegerField(default=0)

    def __str__(self):
        return f"store {self.store_id}: {self.live} live, {self.deleted} deleted coupons"


# The counters of CouponTotal and which coupons each counts.
COUPON_TOTALS = ListTotals(
    table=Coupon._meta.db_table,
    totals_table=CouponTotal._meta.db_table,
    counters=(("live", "deleted_at IS NULL"), ("deleted", "deleted_at IS NOT NULL")),
)


def discount_exceeds_type(*, type: str, discount: int) -> bool:
    """The rule that ties two fields (docs/design.md "Coupons (v1)"): checked by the serializer on
    the merged request and by the service again under the row lock."""
    return type == Coupon.TYPE_PERCENTAGE and discount > PERCENTAGE_MAX_DISCOUNT
