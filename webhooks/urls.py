from core.api.routers import ApiRouter
from webhooks.channels import destination, event_types
from webhooks.channels import views as channels
from webhooks.deliveries import views as deliveries

router = ApiRouter()
router.register(
    "webhook-destination", destination.WebhookDestinationViewSet, basename="webhook-destination"
)
router.register("webhook-channels", channels.WebhookChannelViewSet, basename="webhook-channel")
router.register(
    "webhook-event-types", event_types.WebhookEventTypeViewSet, basename="webhook-event-type"
)
router.register(
    "webhook-deliveries", deliveries.WebhookDeliveryViewSet, basename="webhook-delivery"
)

urlpatterns = router.urls
