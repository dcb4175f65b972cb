from core.api.routers import ApiRouter
from orders import views

router = ApiRouter()
router.register("invoices", views.InvoiceV1ViewSet, basename="v1-invoice")

urlpatterns = router.urls
