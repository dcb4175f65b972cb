from decimal import Decimal

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from django.utils import timezone

from core.database.list_totals import ListTotals

# PostgreSQL `integer`: the bound of every integer field a client may write.
MAX_INTEGER = 2_147_483_647
# A PERCENTAGE coupon's discount is a percentage: at most this.
PERCENTAGE_MAX_DISCOUNT = 100
PERCENTAGE_DISCOUNT_RULE = (
    f"must be between 1 and {PERCENTAGE_MAX_DISCOUNT} for a PERCENTAGE coupon"
)
# Money and discounts: numeric(12,2), dollars with cents (docs/decisions/coupons.md "Amounts:
# numeric(12,2), rendered as quoted strings on v1 and v2").
MONEY_DIGITS, MONEY_PLACES = 12, 2
MONEY_MAX = Decimal("9999999999.99")
SUBSCRIPTION_PAYMENTS_MAX = 36
SUBSCRIPTION_PAYMENTS_RULE = (
    f"The number of discounted payments must be between 1 and {SUBSCRIPTION_PAYMENTS_MAX}."
)
SUBSCRIPTIONS_DISCOUNT_RULE = (
    "must be below 100 for a subscriptions coupon (offer a free trial instead)"
)
MAXIMUM_DISCOUNT_RULE = "applies to PERCENTAGE coupons only; send null for an AMOUNT coupon"


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

    Writes go through coupons/services.py. `discount` is a percentage (PERCENTAGE) or dollars
    (AMOUNT); `minimum_amount` and `maximum_discount_amount` (the cap of a PERCENTAGE coupon)
    are dollars, all with cents. `products` and `product_variants` are ids the store's
    catalogue gives them, kept as references: the service has no catalogue
    (docs/decisions/coupons.md "Products and variants are references").
    """

    TYPE_PERCENTAGE = "PERCENTAGE"
    TYPE_AMOUNT = "AMOUNT"
    TYPE_CHOICES = [(TYPE_PERCENTAGE, "Percentage"), (TYPE_AMOUNT, "Amount")]
    APPLIES_TO_ONE_TIME = "one_time"
    APPLIES_TO_SUBSCRIPTIONS = "subscriptions"
    APPLIES_TO_CHOICES = [
        (APPLIES_TO_ONE_TIME, "One-time purchases"),
        (APPLIES_TO_SUBSCRIPTIONS, "Subscription payments"),
    ]

    store = models.ForeignKey("stores.Store", on_delete=models.CASCADE, related_name="coupons")
    code = models.CharField(max_length=255)
    type = models.CharField(max_length=16, choices=TYPE_CHOICES)
    discount = models.DecimalField(max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES)
    limit = models.PositiveIntegerField(null=True, blank=True)
    times_used = models.PositiveIntegerField(default=0)
    store_wide = models.BooleanField()
    minimum_amount = models.DecimalField(
        max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES, null=True, blank=True
    )
    maximum_discount_amount = models.DecimalField(
        max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES, null=True, blank=True
    )
    # db_default too: a row written by plain SQL (bench/list_growth.py) gets the defaults.
    applies_to = models.CharField(
        max_length=16,
        choices=APPLIES_TO_CHOICES,
        default=APPLIES_TO_ONE_TIME,
        db_default=APPLIES_TO_ONE_TIME,
    )
    subscription_payments = models.PositiveSmallIntegerField(null=True, blank=True)
    products = ArrayField(models.BigIntegerField(), default=list, db_default=[], blank=True)
    product_variants = ArrayField(models.BigIntegerField(), default=list, db_default=[], blank=True)
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
            # A subscriptions coupon discounts 1 to 36 payments; a one_time coupon stores null.
            models.CheckConstraint(
                condition=Q(applies_to="one_time", subscription_payments__isnull=True)
                | Q(
                    applies_to="subscriptions",
                    subscription_payments__gte=1,
                    subscription_payments__lte=SUBSCRIPTION_PAYMENTS_MAX,
                ),
                name="coupon_applies_to_payments",
            ),
            models.CheckConstraint(
                condition=Q(maximum_discount_amount__isnull=True)
                | Q(type="PERCENTAGE", maximum_discount_amount__gt=0),
                name="coupon_maximum_discount_percentage",
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


# The coupon's fields as its representation names them, in the spec's order ("Coupon (v1)"):
# the keys of a response (coupons/serializers.py), the columns of a listed coupon
# (coupons/selectors.py) and, but for the lists of references, the fields a search may name
# (coupons/search.py). `times_used` is not in the API.
COUPON_API_FIELDS = (
    "id",
    "code",
    "type",
    "discount",
    "limit",
    "store_wide",
    "minimum_amount",
    "expires_at",
    "maximum_discount_amount",
    "applies_to",
    "subscription_payments",
    "products",
    "product_variants",
    "created_at",
    "updated_at",
    "store_id",
    "deleted_at",
)
# The ids the store's catalogue gives, kept as lists of references.
COUPON_REFERENCE_FIELDS = ("products", "product_variants")


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


# The fields the rules of `coupon_rule_errors` read, and what a replacement (PUT) or a
# creation leaves them at when the body omits them.
COUPON_DEFAULTS = {
    "limit": None,
    "minimum_amount": None,
    "expires_at": None,
    "maximum_discount_amount": None,
    "applies_to": Coupon.APPLIES_TO_ONE_TIME,
    "subscription_payments": None,
    "products": [],
    "product_variants": [],
}
TIED_FIELDS = (
    "type",
    "discount",
    "maximum_discount_amount",
    "applies_to",
    "subscription_payments",
)


def coupon_settle(state: dict) -> dict:
    """`state` with what follows from it: a one_time coupon stores no payment count (the SDK's
    rule: "A one_time coupon always stores null here")."""
    if state.get("applies_to") == Coupon.APPLIES_TO_ONE_TIME:
        return {**state, "subscription_payments": None}
    return state


def coupon_rule_errors(state: dict) -> dict[str, list[str]]:
    """The rules that tie fields together (docs/design.md "Coupons (v1)"), on a whole coupon's
    `TIED_FIELDS`: checked by the serializer on the merged request and by the service again
    under the row lock. None ties `store_wide` to `products`: a coupon that is not store-wide
    may have no products yet, and then applies to none (docs/decisions/coupons.md "A coupon that
    is not store-wide may start with no products")."""
    errors: dict[str, list[str]] = {}
    percentage = state["type"] == Coupon.TYPE_PERCENTAGE
    subscriptions = state["applies_to"] == Coupon.APPLIES_TO_SUBSCRIPTIONS
    if percentage and state["discount"] > PERCENTAGE_MAX_DISCOUNT:
        errors["discount"] = [PERCENTAGE_DISCOUNT_RULE]
    elif percentage and subscriptions and state["discount"] >= PERCENTAGE_MAX_DISCOUNT:
        errors["discount"] = [SUBSCRIPTIONS_DISCOUNT_RULE]
    if not percentage and state["maximum_discount_amount"] is not None:
        errors["maximum_discount_amount"] = [MAXIMUM_DISCOUNT_RULE]
    if subscriptions and state["subscription_payments"] is None:
        errors["subscription_payments"] = [SUBSCRIPTION_PAYMENTS_RULE]
    return errors
