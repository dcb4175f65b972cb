"""Admin: channels (enable/disable, secret rotation, test send, recover) and deliveries with
their attempts and a replay action. Every change goes through the area's services."""

from datetime import timedelta

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import get_permission_codename
from django.urls import reverse
from django.utils import timezone
from oauth2_provider.admin import mask_credential

from accounts.admin_secrets import SecretLookupsRefused, secret_shown_once_response
from core.admin_filters import NoAddAdminMixin, StoreSlugFilter
from core.api.errors import ApiError
from webhooks.channels.recovery import channel_recover
from webhooks.channels.services import channel_test_send, signing_secret_rotate
from webhooks.deliveries.services import delivery_replay
from webhooks.dispatch.failures import channel_enabled_set
from webhooks.models import (
    WebhookChannel,
    WebhookDelivery,
    WebhookDeliveryAttempt,
    WebhookSigningSecret,
    url_origin,
)


@admin.register(WebhookChannel)
class WebhookChannelAdmin(NoAddAdminMixin, SecretLookupsRefused, admin.ModelAdmin):
    # Not added here: PUT /api/v2/webhook-destination creates it, validating the URL (SSRF).
    list_display = [
        "store",
        "name",
        "channel",
        "enabled",
        "disabled_reason",
        "failing_since",
        "updated_at",
    ]
    list_filter = ["enabled", "disabled_reason", StoreSlugFilter]
    list_select_related = ["store"]
    autocomplete_fields = ["store"]
    # Not the URL: a search by its path would reveal the path one guess at a time.
    search_fields = ["store__slug"]
    readonly_fields = [
        "store",
        "name",
        "channel",
        "event_types",
        "enabled",
        "disabled_reason",
        "failing_since",
        "signing_secret",
        "previous_signing_secret",
        "created_at",
        "updated_at",
    ]
    # Not the URL: its path or query can be a credential (hooks.slack.com/services/...). The
    # signing secret is the store's (WebhookSigningSecret), never rendered here.
    exclude = ["url"]
    secret_fields = ("url",)
    actions = ["enable", "disable", "rotate_secret", "send_test", "recover"]

    # The store's secrets are never rendered; a masked tail tells two of them apart.
    @admin.display(description="signing secret (the store's)")
    def signing_secret(self, channel: WebhookChannel) -> str:
        found = WebhookSigningSecret.objects.filter(store_id=channel.store_id).first()
        return mask_credential(found.secret) if found else "-"

    @admin.display(description="previous signing secret")
    def previous_signing_secret(self, channel: WebhookChannel) -> str:
        found = WebhookSigningSecret.objects.filter(store_id=channel.store_id).first()
        return mask_credential(found.previous_secret) if found and found.previous_secret else "-"

    # Not sortable either: the order of the full URLs would reveal their paths too.
    @admin.display(description="channel")
    def channel(self, channel: WebhookChannel) -> str:
        return url_origin(channel.url)

    @admin.action(description="Enable the selected channels", permissions=["change"])
    def enable(self, request, queryset):
        for channel in queryset:
            channel_enabled_set(channel=channel, enabled=True)
        self.message_user(request, f"Enabled {queryset.count()} channel(s).")

    @admin.action(description="Disable the selected channels", permissions=["change"])
    def disable(self, request, queryset):
        for channel in queryset:
            channel_enabled_set(channel=channel, enabled=False)
        self.message_user(request, f"Disabled {queryset.count()} channel(s).")

    @admin.action(description="Rotate the signing secret", permissions=["change"])
    def rotate_secret(self, request, queryset):
        secrets = []
        # The secret is the store's: once per store, however many of its channels are selected.
        stores = {channel.store_id: channel.store for channel in queryset.select_related("store")}
        for store in stores.values():
            rotated = signing_secret_rotate(store=store)
            secrets.append((store.slug, rotated.secret))
        return secret_shown_once_response(
            self,
            request,
            title="New signing secrets",
            secrets=secrets,
            continue_url=reverse("admin:webhooks_webhookchannel_changelist"),
        )

    def _each(self, request, queryset, run, done: str) -> None:
        """Runs `run(channel)` for each selected channel; a refusal (ApiError) is its message."""
        for channel in queryset.select_related("store"):
            try:
                outcome = run(channel)
            except ApiError as error:
                # The store's recover budget (webhooks/channels/recovery.py) binds the admin too.
                retry_after = getattr(error, "retry_after", None)  # RateLimited's
                wait = f" (retry after {retry_after} s)" if retry_after else ""
                self.message_user(request, f"{channel}: {error.message}{wait}", messages.ERROR)
            else:
                self.message_user(request, f"{channel}: {done.format(outcome)}")

    @admin.action(
        description="Send a test event (the channel's first event type)", permissions=["change"]
    )
    def send_test(self, request, queryset):
        def run(channel):
            event_type = channel.event_types[0]
            channel_test_send(store=channel.store, channel=channel, event_type=event_type)
            return event_type

        self._each(request, queryset, run, "test {} delivered.")

    @admin.action(
        description="Recover every missed event of the retention period", permissions=["change"]
    )
    def recover(self, request, queryset):
        # A minute inside the retention: `since` must still be retained when it is checked.
        since = timezone.now() - timedelta(days=settings.EVENTS_RETENTION_DAYS, minutes=-1)
        self._each(
            request,
            queryset,
            lambda channel: channel_recover(channel=channel, since=since)["queued"],
            "{} deliveries queued.",
        )


class WebhookDeliveryAttemptInline(NoAddAdminMixin, admin.TabularInline):
    model = WebhookDeliveryAttempt
    extra = 0
    can_delete = False
    fields = readonly_fields = [
        "number",
        "channel",
        "started_at",
        "duration_ms",
        "response_status",
        "response_body",
        "error",
    ]

    @admin.display(description="channel")
    def channel(self, attempt: WebhookDeliveryAttempt) -> str:
        # Attempts keep only the origin, as the channel itself shows.
        return attempt.origin


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(NoAddAdminMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "store",
        "event_type",
        "status",
        "attempts",
        "response_status",
        "next_attempt_at",
        "created_at",
    ]
    list_filter = ["status", "event_type", StoreSlugFilter]
    list_select_related = ["store"]
    autocomplete_fields = ["store"]
    date_hierarchy = "created_at"
    search_fields = ["id", "event__id", "store__slug"]
    readonly_fields = [f.name for f in WebhookDelivery._meta.fields]
    inlines = [WebhookDeliveryAttemptInline]
    actions = ["replay"]

    def has_replay_permission(self, request):
        # A replay adds a delivery; the add form itself stays off (deliveries come from events).
        codename = get_permission_codename("add", self.opts)
        return request.user.has_perm(f"{self.opts.app_label}.{codename}")

    @admin.action(
        description="Replay (send the event again as a new delivery)", permissions=["replay"]
    )
    def replay(self, request, queryset):
        for delivery in queryset.select_related("store"):
            try:
                new = delivery_replay(store=delivery.store, delivery_id=delivery.pk)
            except ApiError as error:
                # The store's replay cap (services.delivery_replay) binds the admin too.
                retry_after = getattr(error, "retry_after", None)  # RateLimited's
                wait = f" (retry after {retry_after} s)" if retry_after else ""
                self.message_user(request, f"{delivery.pk}: {error.message}{wait}", messages.ERROR)
            else:
                self.message_user(request, f"{delivery.pk} replayed as {new.pk}.")
