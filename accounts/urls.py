from accounts import views
from core.api.routers import ApiRouter

router = ApiRouter()
router.register("me", views.MeViewSet, basename="me")

urlpatterns = router.urls
