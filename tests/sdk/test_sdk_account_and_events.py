"""The official SDK's account, store, event journal and webhook platform calls against the API
under production settings: each call answers, and the SDK reads the answer as its own models."""

import uuid

import pytest
from sellapp_sdk import AuthenticationError, SellAppClient

from orders.services import order_complete, order_place
from tests.factories import WebhookChannelFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_account_and_stores(sdk, sdk_owner):
    user, store, _ = sdk_owner

    account = sdk.account.get_account()
    stores = sdk.account.list_stores()
    one = sdk.account.get_store(store.pk)
    permissions = sdk.account.get_store_permissions()
    created = sdk.account.create_store(
        name="Second shop", slug=f"second{uuid.uuid4().hex[:8]}", idempotency_key=str(uuid.uuid4())
    )

    assert account.data.username == user.username
    assert [listed.slug for listed in stores.data] == [store.slug]
    assert one.data.slug == store.slug
    # The SDK models this answer as a free-form object.
    assert "coupon:write" in permissions.data.additional_properties["effective_abilities"]
    assert created.data.name == "Second shop"


def test_a_bogus_key_is_the_sdk_authentication_error(production_api, sdk_owner):
    _, store, _ = sdk_owner
    client = SellAppClient(
        api_key="sf_" + "x" * 40, store=store.slug, base_url=production_api, max_retries=0
    )

    with pytest.raises(AuthenticationError) as raised:
        client.account.get_account()

    assert raised.value.status == 401


def test_event_journal(sdk, sdk_owner):
    _, store, _ = sdk_owner
    order = order_complete(order=order_place(store=store, subtotal_cents=2599))

    page = sdk.events.list_integration_events(limit=10)
    of_order = sdk.events.list_order_events(order.pk)

    assert [event.type for event in page.data] == ["order.completed"]
    assert [event.type for event in of_order.data] == ["order.completed"]


def test_webhook_platform_reads(sdk):
    types = sdk.webhook_platform.list_webhook_event_types()
    deliveries = sdk.webhook_platform.list_webhook_deliveries(limit=10)

    assert "coupon.created" in {entry.type for entry in types.data}
    assert list(deliveries.data) == []


def test_webhook_delivery_read_and_replay(sdk, sdk_owner):
    _, store, _ = sdk_owner
    WebhookChannelFactory(store=store)
    order_complete(order=order_place(store=store, subtotal_cents=2599))
    [listed] = sdk.webhook_platform.list_webhook_deliveries(limit=10).data

    read = sdk.webhook_platform.get_webhook_delivery(listed.id)
    replay = sdk.webhook_platform.replay_webhook_delivery(
        listed.id, idempotency_key=str(uuid.uuid4())
    )

    assert read.data.id == listed.id
    assert replay.data.id != listed.id
    assert replay.data.event_id == listed.event_id


def test_oauth_installation(production_api, sdk_owner, tokens, user):
    cli = SellAppClient(access_token=tokens["access_token"], base_url=production_api, max_retries=0)

    installation = cli.oauth_management.get_oauth_installation()
    cli.oauth_management.delete_oauth_installation()

    assert installation.data.id
    with pytest.raises(AuthenticationError):
        cli.oauth_management.get_oauth_installation()
