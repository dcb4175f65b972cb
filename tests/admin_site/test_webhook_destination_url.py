"""A webhook destination's URL path (and query) can be a credential (hooks.slack.com/services/
...): the admin names a channel by its origin only, in its pages, its messages (a cookie)
and its log (LogEntry), for a change and for a deletion alike."""

import pytest
from django.contrib.admin.models import LogEntry

from tests.admin_users import cookies_carry, sessions_carry, staff_client_with
from tests.factories import MembershipFactory, WebhookChannelFactory
from tests.webhooks.helpers import record_order_completed
from webhooks.models import WebhookChannel, WebhookDelivery, WebhookDeliveryAttempt, url_origin

pytestmark = pytest.mark.django_db

CREDENTIAL_PATH = "/services/T0001/B0002/s3cr3tPathCredential"
CREDENTIAL_QUERY = "token=q5ecretQueryToken"
URL = f"https://hooks.example.com{CREDENTIAL_PATH}?{CREDENTIAL_QUERY}"
CREDENTIAL_PARTS = ("s3cr3tPathCredential", "q5ecretQueryToken")
CHANNELS = "/admin/webhooks/webhookchannel/"


@pytest.fixture
def channel():
    return WebhookChannelFactory(
        store=MembershipFactory().store, url=URL, signing_secret="whsec_0123456789abcdefABCDEF0123"
    )


def assert_nothing_carries_the_credential(response, client, *texts: str):
    for part in CREDENTIAL_PARTS:
        assert not cookies_carry(response, client, part), part
        assert not sessions_carry(part), part
        for text in texts:
            assert part not in text, part


def test_a_channel_is_named_by_its_origin(channel):
    assert str(channel) == f"{channel.store_id} -> https://hooks.example.com"


def test_saving_a_channel_in_the_admin_keeps_its_url_path_out_of_cookie_and_log(
    channel,
):
    # given: staff who may change channels (every field is read-only, "Save" still logs)
    editor = staff_client_with("webhooks.view_webhookchannel", "webhooks.change_webhookchannel")
    # when
    response = editor.post(f"{CHANNELS}{channel.pk}/change/", {})
    # then: the message ("... was changed successfully") and the log entry name the origin
    assert response.status_code == 302
    entry = LogEntry.objects.get()
    assert "hooks.example.com" in entry.object_repr
    following = editor.get(response["Location"]).content.decode()
    assert "hooks.example.com" in following
    assert_nothing_carries_the_credential(
        response, editor, entry.object_repr, entry.get_change_message(), following
    )


def test_deleting_a_channel_in_the_admin_keeps_its_url_path_out_of_cookie_and_log(
    channel,
):
    remover = staff_client_with("webhooks.view_webhookchannel", "webhooks.delete_webhookchannel")
    confirmation = remover.get(f"{CHANNELS}{channel.pk}/delete/")
    assert confirmation.status_code == 200

    response = remover.post(f"{CHANNELS}{channel.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not WebhookChannel.objects.exists()
    entry = LogEntry.objects.get()
    assert "hooks.example.com" in entry.object_repr
    following = remover.get(response["Location"]).content.decode()
    assert_nothing_carries_the_credential(
        response, remover, confirmation.content.decode(), entry.object_repr, following
    )


def test_admin_pages_show_the_destination_origin_not_its_url(channel):
    # given: a delivery to it with an attempt (the attempt keeps the origin it was sent to)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(channel.store, order_id=1))
    WebhookDeliveryAttempt.objects.create(
        delivery=delivery,
        delivery_event_occurred_at=delivery.event_occurred_at,
        number=1,
        origin=url_origin(URL),
        response_status=500,
    )
    viewer = staff_client_with("webhooks.view_webhookchannel", "webhooks.view_webhookdelivery")
    # when
    pages = [
        viewer.get(CHANNELS),
        viewer.get(f"{CHANNELS}{channel.pk}/change/"),
        viewer.get(f"/admin/webhooks/webhookdelivery/{delivery.pk}/change/"),
    ]
    # then
    for response in pages:
        assert response.status_code == 200
        page = response.content.decode()
        assert "https://hooks.example.com" in page
        for part in CREDENTIAL_PARTS:
            assert part not in page


def test_searching_by_a_piece_of_the_url_path_finds_nothing(channel):
    viewer = staff_client_with("webhooks.view_webhookchannel")

    by_path = viewer.get(CHANNELS, {"q": "s3cr3tPath"}).content.decode()
    by_store = viewer.get(CHANNELS, {"q": channel.store.slug}).content.decode()

    assert "0 webhook channels" in by_path
    assert "1 webhook channel" in by_store
