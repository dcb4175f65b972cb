"""Each event type's JSON Schema (2020-12) and example: published by
/api/v2/webhook-event-types, valid schemas, valid examples, and every type recorded through its
real emitter stores a `data` that its published schema accepts."""

import pytest
from jsonschema import Draft202012Validator

from coupons.models import Coupon
from coupons.services import coupon_create, coupon_delete, coupon_update
from events.models import Event
from events.registry import EVENT_TYPES
from orders.services import order_complete, order_place

pytestmark = pytest.mark.django_db


def published(auth_client) -> dict:
    response = auth_client.get("/api/v2/webhook-event-types")
    assert response.status_code == 200
    return {entry["type"]: entry for entry in response.json()["data"]}


def test_every_type_publishes_a_2020_12_schema_and_an_example_valid_against_it(auth_client):
    types = published(auth_client)

    assert set(types) == set(EVENT_TYPES)
    for name, entry in types.items():
        assert set(entry) == {"type", "version", "description", "schema", "example"}, name
        assert entry["schema"]["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        Draft202012Validator.check_schema(entry["schema"])
        assert not list(Draft202012Validator(entry["schema"]).iter_errors(entry["example"])), name


def test_every_type_recorded_by_its_emitter_matches_its_published_schema(auth_client, store):
    # when: each emitter records its events
    coupon = coupon_create(
        store=store, code="SCHEMA10", type=Coupon.TYPE_AMOUNT, discount=5, store_wide=True
    )
    coupon_update(coupon=coupon, changes={"discount": 6})
    coupon_delete(coupon=coupon)
    order_complete(order=order_place(store=store, subtotal_cents=2599, currency="EUR"))

    # then: every registered type was recorded, and each stored data is valid
    types = published(auth_client)
    recorded = list(Event.objects.filter(store=store))
    assert {event.type for event in recorded} == set(EVENT_TYPES)
    for event in recorded:
        validator = Draft202012Validator(types[event.type]["schema"])
        assert not list(validator.iter_errors(event.data)), (event.type, event.data)
