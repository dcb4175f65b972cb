from core.api.routers import ApiRouter
from coupons.views import CouponV2ViewSet

router = ApiRouter()
router.register("coupons", CouponV2ViewSet, basename="coupon-v2")

urlpatterns = router.urls
