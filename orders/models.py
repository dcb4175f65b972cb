from django.db import models
from django.utils import timezone


class Order(models.Model):
    """A store's order; its invoice lists are /api/v1/invoices and /api/v2/invoices."""

    STATUS_PENDING = "pending"
    STATUS_COMPLETED = "completed"
    STATUS_CANCELLED = "cancelled"
    STATUS_CHOICES = [
        (STATUS_PENDING, "Pending"),
        (STATUS_COMPLETED, "Completed"),
        (STATUS_CANCELLED, "Cancelled"),
    ]

    store = models.ForeignKey("stores.Store", on_delete=models.CASCADE, related_name="orders")
    status = models.CharField(max_length=16, choices=STATUS_CHOICES, default=STATUS_PENDING)
    subtotal_cents = models.PositiveBigIntegerField()
    discount_cents = models.PositiveBigIntegerField(default=0)
    # What the customer pays: subtotal minus the coupon discount.
    total_cents = models.PositiveBigIntegerField()
    currency = models.CharField(max_length=3, default="USD")
    coupon = models.ForeignKey(
        "coupons.Coupon", null=True, blank=True, on_delete=models.SET_NULL, related_name="orders"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["store", "-id"], name="order_store_id_desc_idx")]

    def __str__(self):
        return f"order {self.pk} ({self.status})"
