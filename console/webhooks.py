"""Webhooks pages: the store's channels (list, create, edit, enable/disable, delete), the
signing secret (generate or set), a test event, recover, and the event types. Each write is the
service the channels API calls, its input checked by the API's own serializer."""

from django.contrib import messages
from django.db import transaction
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.debug import sensitive_post_parameters

from console import webhooks_area as area
from console.pages import console_view, render_page, submit, validated
from console.shown_once import secret_keep_for_next_page, secret_take
from events.registry import EVENT_TYPES

READ, WRITE = "webhook:read", "webhook:write"
SIGNING_SECRET = "signing_secret"


def _channel_rows(request, channels) -> list[dict]:
    """The channels as the API shows them to this member: the full URL only with
    `webhook:write`, else its origin (the path can be a credential)."""
    context = {
        "url_in_full": request.console.may(WRITE),
        "signing_secret_configured": area.signing_secret_configured(store=request.console.store),
    }
    rows = area.WebhookChannelSerializer(channels, many=True, context=context).data
    for row, channel in zip(rows, channels, strict=True):
        row["disabled_reason_text"] = area.disabled_reason_text(channel.disabled_reason)
        row["failing_since"] = channel.failing_since
    return rows


def _form_values(request) -> dict:
    """A channel form's fields as the API's serializers take them."""
    return {
        "name": request.POST.get("name", ""),
        "url": request.POST.get("url", ""),
        "allowed_notifications": request.POST.getlist("allowed_notifications"),
    }


@console_view(permission=READ)
def channels(request):
    store = request.console.store
    found = list(area.channels_of(store=store, url_in_full=request.console.may(WRITE)))

    def show(error=None):
        context = {
            "section": "webhooks",
            "channels": _channel_rows(request, found),
            "event_types": sorted(EVENT_TYPES),
            "checked": set(request.POST.getlist("allowed_notifications")),
            "form_data": request.POST,
        }
        return render_page(request, "console/channels.html", context, error=error)

    if request.method == "POST":

        def create():
            request.console.require(WRITE)
            values = _form_values(request)
            data = validated(area.WebhookChannelCreateSerializer, values, store=store)
            channel = area.channel_create(store=store, **data)
            messages.success(request, "Channel added.")
            return channel

        def added(channel):
            return reverse("console:channel", args=[channel.uid])

        return submit(request, create, page=show, success_url=added)
    return show()


def _channel_page(request, channel, error=None):
    row = _channel_rows(request, [channel])[0]
    posted = request.POST if error is not None else {}
    context = {
        "section": "webhooks",
        "channel": row,
        "event_types": sorted(EVENT_TYPES),
        "checked": set(posted.getlist("allowed_notifications"))
        if posted and "allowed_notifications" in posted
        else set(row["allowed_notifications"]),
        "form_data": posted,
    }
    return render_page(request, "console/channel.html", context, error=error)


def _channel_action(request, channel_id, action, done: str):
    """A POST on one channel: `action(channel)` then back to its page with `done`; a GET of
    the action's address is the channel's page."""
    channel = area.channel_get(store=request.console.store, channel_id=channel_id)
    if request.method != "POST":
        return redirect("console:channel", channel_id=channel.uid)

    def run():
        request.console.require(WRITE)
        message = action(channel)
        messages.success(request, message or done)

    return submit(
        request,
        run,
        page=lambda error: _channel_page(request, channel, error),
        success_url=reverse("console:channel", args=[channel.uid]),
    )


@console_view(permission=READ)
def channel(request, channel_id):
    store = request.console.store
    if request.method != "POST":
        found = area.channel_get(store=store, channel_id=channel_id)
        return _channel_page(request, found)

    def edit(found):
        data = validated(area.WebhookChannelReplaceSerializer, _form_values(request), store=store)
        area.channel_update(channel=found, **data)

    return _channel_action(request, channel_id, edit, "Channel saved.")


@console_view(permission=READ)
def channel_enabled(request, channel_id):
    def switch(found):
        enabled = request.POST.get("enabled") == "true"
        area.channel_update(channel=found, enabled=enabled)
        return "Channel enabled." if enabled else "Channel disabled."

    return _channel_action(request, channel_id, switch, "")


@console_view(permission=READ)
def channel_test(request, channel_id):
    store = request.console.store

    def send(found):
        event = validated(area.WebhookChannelTestSerializer, {"event": request.POST.get("event")})
        area.channel_test_send(store=store, channel=found, event_type=event["event"])
        return f"Test event {event['event']} delivered: the receiver answered with a 2xx status."

    return _channel_action(request, channel_id, send, "")


@console_view(permission=READ)
def channel_recover(request, channel_id):
    def recover(found):
        window = {"since": request.POST.get("since", "")}
        if request.POST.get("until"):
            window["until"] = request.POST["until"]
        data = validated(area.WebhookChannelRecoverSerializer, window)
        result = area.channel_recover(channel=found, since=data["since"], until=data.get("until"))
        return (
            f"Queued {result['queued']} missed event(s) from {result['since']:%Y-%m-%dT%H:%M:%SZ}"
            f" until {result['until']:%Y-%m-%dT%H:%M:%SZ}; recover again from there for more."
        )

    return _channel_action(request, channel_id, recover, "")


@console_view(permission=READ)
def channel_delete(request, channel_id):
    found = area.channel_get(store=request.console.store, channel_id=channel_id)
    if request.method == "POST":

        def delete():
            request.console.require(WRITE)
            area.channel_delete(channel=found)
            messages.success(request, "Channel deleted.")

        return submit(
            request,
            delete,
            page=lambda error: _channel_page(request, found, error),
            success_url=reverse("console:channels"),
        )
    context = {"section": "webhooks", "channel": _channel_rows(request, [found])[0]}
    return render_page(request, "console/channel_delete.html", context)


@sensitive_post_parameters(SIGNING_SECRET)
@console_view(permission=READ)
def signing_secret(request):
    store = request.console.store

    def show(error=None):
        context = {
            "section": "webhooks",
            "dates": area.signing_secret_dates(store=store),
            "secret": secret_take(request, purpose=SIGNING_SECRET) if error is None else None,
        }
        return render_page(request, "console/signing_secret.html", context, error=error)

    if request.method == "POST":

        def change():
            request.console.require(WRITE)
            if request.POST.get("generate"):
                secret = area.secret_new()
                with transaction.atomic():
                    area.signing_secret_supplied(store=store, signing_secret=secret)
                    secret_keep_for_next_page(request, purpose=SIGNING_SECRET, secret=secret)
                messages.success(request, "A new signing secret now signs every delivery.")
                return
            data = validated(
                area.WebhookSigningSecretSerializer,
                {SIGNING_SECRET: request.POST.get(SIGNING_SECRET, "")},
            )
            area.signing_secret_supplied(store=store, **data)
            messages.success(request, "Your signing secret now signs every delivery.")

        return submit(request, change, page=show, success_url=reverse("console:signing-secret"))
    return show()


@console_view(permission=READ)
def event_types(request):
    context = {"section": "webhooks", "event_types": area.event_types_list()}
    return render_page(request, "console/event_types.html", context)
