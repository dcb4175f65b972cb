import pytest
from django.db import transaction
from rest_framework.test import APIClient

from events.services import record
from tests.factories import MembershipFactory, UserFactory, make_api_key


def record_committed(store, type="coupon.created", subject=("coupon", "1"), data=None):
    """Records one event in its own committed transaction, as a service would."""
    with transaction.atomic():
        return record(store=store, type=type, subject=subject, data=data)


def client_for(api_key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key}")
    return client


@pytest.fixture
def other_client(other_store):
    """An all-abilities key of another user, owner of `other_store` only."""
    owner = UserFactory()
    MembershipFactory(user=owner, store=other_store)
    return client_for(make_api_key(owner))


def poll_all(client, url="/api/v2/events", params=None, limit=100):
    """Follows next_cursor until has_more is false; returns (events, last next_cursor)."""
    params = dict(params or {})
    params["limit"] = limit
    seen = []
    while True:
        response = client.get(url, params)
        assert response.status_code == 200, response.json()
        body = response.json()
        seen.extend(body["data"])
        params["cursor"] = body["meta"]["next_cursor"]
        if not body["meta"]["has_more"]:
            return seen, params["cursor"]
