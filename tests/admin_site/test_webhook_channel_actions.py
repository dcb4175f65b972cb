"""The admin's channel actions: a test send and recover, for staff with the change
permission only."""

import pytest

from tests.admin_users import post_action, staff_client_with
from tests.factories import TEST_SIGNING_SECRET, MembershipFactory, WebhookChannelFactory
from tests.webhooks.helpers import record_order_completed
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db

CHANNELS = "/admin/webhooks/webhookchannel/"
VIEW = "webhooks.view_webhookchannel"
CHANGE = "webhooks.change_webhookchannel"


@pytest.fixture
def channel(receiver):
    return WebhookChannelFactory(store=MembershipFactory().store, url=receiver.url)


def test_staff_who_may_change_send_a_test_event(channel, receiver):
    from standardwebhooks import Webhook

    response = post_action(staff_client_with(VIEW, CHANGE), CHANNELS, "send_test", [channel.pk])

    assert response.status_code == 302
    (request,) = receiver.received()
    assert Webhook(TEST_SIGNING_SECRET).verify(request.body, request.headers)["test"] is True


def test_staff_who_may_change_recover_missed_events(channel):
    event = record_order_completed(channel.store)
    WebhookDelivery.objects.filter(event=event).update(status="failed")

    post_action(staff_client_with(VIEW, CHANGE), CHANNELS, "recover", [channel.pk])

    assert WebhookDelivery.objects.filter(event=event, status="pending").count() == 1


@pytest.mark.parametrize("action", ["send_test", "recover"])
def test_view_only_staff_can_do_neither(channel, receiver, action):
    event = record_order_completed(channel.store)
    WebhookDelivery.objects.filter(event=event).update(status="failed")

    post_action(staff_client_with(VIEW), CHANNELS, action, [channel.pk])

    assert receiver.received() == []
    assert not WebhookDelivery.objects.filter(event=event, status="pending").exists()
