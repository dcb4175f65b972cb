from django.urls import path

from webhooks import views

urlpatterns = [
    path("webhook-destination", views.WebhookDestinationView.as_view(), name="webhook-destination"),
    path(
        "webhook-destination/rotate-secret",
        views.WebhookDestinationSecretRotateView.as_view(),
        name="webhook-destination-rotate-secret",
    ),
    path(
        "webhook-event-types", views.WebhookEventTypeListView.as_view(), name="webhook-event-types"
    ),
    path("webhook-deliveries", views.WebhookDeliveryListView.as_view(), name="webhook-deliveries"),
    path(
        "webhook-deliveries/<str:delivery>",
        views.WebhookDeliveryDetailView.as_view(),
        name="webhook-delivery",
    ),
    path(
        "webhook-deliveries/<str:delivery>/replay",
        views.WebhookDeliveryReplayView.as_view(),
        name="webhook-delivery-replay",
    ),
]
