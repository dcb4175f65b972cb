from core.api.routers import ApiRouter
from webhooks import channel_views, views

router = ApiRouter()
router.register(
    "webhook-destination", views.WebhookDestinationViewSet, basename="webhook-destination"
)
router.register("webhook-channels", channel_views.WebhookChannelViewSet, basename="webhook-channel")
router.register("webhook-event-types", views.WebhookEventTypeViewSet, basename="webhook-event-type")
router.register("webhook-deliveries", views.WebhookDeliveryViewSet, basename="webhook-delivery")

urlpatterns = router.urls
