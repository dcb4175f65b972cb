from core.api.routers import ApiRouter
from events import views

router = ApiRouter()
router.register("events", views.EventViewSet, basename="events")

urlpatterns = router.urls
