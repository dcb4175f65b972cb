from core.api.routers import ApiRouter
from coupons.views import CouponViewSet

router = ApiRouter()
router.register("coupons", CouponViewSet, basename="coupon")

urlpatterns = router.urls
