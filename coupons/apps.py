from django.apps import AppConfig


class CouponsConfig(AppConfig):
    name = "coupons"

    def ready(self):
        from core.database.list_totals import registered
        from coupons.models import COUPON_TOTALS

        registered["coupons"] = COUPON_TOTALS

        from coupons.event_types import register

        register()
