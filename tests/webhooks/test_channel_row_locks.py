"""A change to a channel (its update, a recover) locks the channel's row against other changes
of it, not against an event's fan-out: a delivery's foreign key to the channel (checked at
commit with KEY SHARE) never waits for it, so a batch write and a channel change cannot
deadlock. Real threads on PostgreSQL."""

import threading

import pytest
from django.db import connection, transaction

from tests.factories import WebhookChannelFactory
from tests.webhooks.helpers import record_order_completed
from webhooks.channels.services import channel_update
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_event_fans_out_to_a_channel_while_a_change_of_it_is_open(store, receiver):
    # given: a change of the channel, its transaction still open in another thread
    channel = WebhookChannelFactory(store=store, url=receiver.url)
    locked, release = threading.Event(), threading.Event()

    def change_held_open():
        try:
            with transaction.atomic():
                channel_update(channel=channel, name="renamed")
                locked.set()
                release.wait(10)
        finally:
            connection.close()

    changer = threading.Thread(target=change_held_open)
    changer.start()
    assert locked.wait(10)
    try:
        # when: an event of the store fans out to that channel, waiting at most 2 s for a lock
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '2s'")
            event = record_order_completed(store, order_id=1)
        # then: its delivery to the channel is written, without waiting for the change
        assert WebhookDelivery.objects.filter(event=event, channel=channel).count() == 1
    finally:
        release.set()
        changer.join(10)
