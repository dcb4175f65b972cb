from core.api.routers import ApiRouter
from stores import views

router = ApiRouter()
router.register("stores", views.StoreViewSet, basename="store")
router.register("permissions", views.PermissionsViewSet, basename="permissions")

urlpatterns = router.urls
