from core.api.routers import ApiRouter
from orders import views

router = ApiRouter()
router.register("invoices", views.InvoiceV2ViewSet, basename="v2-invoice")
router.register(
    r"orders/(?P<order>[0-9]+)/events", views.OrderEventViewSet, basename="order-events"
)

urlpatterns = router.urls
