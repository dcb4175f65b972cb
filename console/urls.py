from django.urls import path

from console import account, deliveries, events, webhooks

app_name = "console"

urlpatterns = [
    path("", account.stores, name="stores"),
    path("stores/choose", account.store_choose, name="store-choose"),
    path("keys/", account.keys, name="keys"),
    path("keys/<int:key_id>/revoke", account.key_revoke, name="key-revoke"),
    path("webhooks/", webhooks.channels, name="channels"),
    path("webhooks/secret", webhooks.signing_secret, name="signing-secret"),
    path("webhooks/event-types", webhooks.event_types, name="event-types"),
    path("webhooks/<str:channel_id>/", webhooks.channel, name="channel"),
    path("webhooks/<str:channel_id>/enabled", webhooks.channel_enabled, name="channel-enabled"),
    path("webhooks/<str:channel_id>/test", webhooks.channel_test, name="channel-test"),
    path("webhooks/<str:channel_id>/recover", webhooks.channel_recover, name="channel-recover"),
    path("webhooks/<str:channel_id>/delete", webhooks.channel_delete, name="channel-delete"),
    path("deliveries/", deliveries.deliveries, name="deliveries"),
    path("deliveries/<str:delivery_id>/", deliveries.delivery, name="delivery"),
    path("events/", events.events, name="events"),
    path("events/<str:event_id>/", events.event, name="event"),
    path("cli/", account.cli, name="cli"),
    path("cli/disconnect", account.cli_disconnect, name="cli-disconnect"),
]
