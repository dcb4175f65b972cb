from config.api.routers import ApiRouter
from orders import views

router = ApiRouter()
router.register("invoices", views.InvoiceV2ViewSet, basename="v2-invoice")

urlpatterns = router.urls
