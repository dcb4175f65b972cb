from config.api.routers import ApiRouter
from events import views

router = ApiRouter()
router.register("events", views.EventViewSet, basename="events")
router.register(
    r"orders/(?P<order>[0-9]+)/events", views.OrderEventViewSet, basename="order-events"
)

urlpatterns = router.urls
