"""Who reads the channel's whole URL (docs/decisions/hardening.md
"Hardening III"): only a credential that may change it (`webhook:write`). A staff member's key
or a `webhook:read` key reads its origin, as the delivery list's `destination_origin` shows it:
the path and query can be a credential."""

import pytest

from accounts.abilities import ROLE_STAFF
from tests.factories import MembershipFactory, UserFactory, make_api_key
from tests.webhooks.helpers import channel_for

URL = "/api/v2/webhook-destination"
ORIGIN = "http://127.0.0.1:8080"
SECRET_URL = f"{ORIGIN}/hook-P4THs3cr3t/x?token=T0KENs3cr3t"


@pytest.fixture
def channel(store):
    return channel_for(store, SECRET_URL)


def test_an_owner_key_reads_the_whole_url(client_for, user, store, channel):
    response = client_for(make_api_key(user)).get(URL)

    assert response.status_code == 200
    assert response.json()["data"]["url"] == SECRET_URL


def test_a_staff_members_key_reads_the_origin_only(client_for, store, channel):
    staff = UserFactory()
    MembershipFactory(user=staff, store=store, role=ROLE_STAFF)

    response = client_for(make_api_key(staff)).get(URL)

    assert response.status_code == 200
    assert response.json()["data"]["url"] == ORIGIN
    assert "s3cr3t" not in response.content.decode()


def test_an_owners_read_only_key_reads_the_origin_only(client_for, user, store, channel):
    response = client_for(make_api_key(user, abilities=["webhook:read"])).get(URL)

    assert response.status_code == 200
    assert response.json()["data"]["url"] == ORIGIN


def test_the_schema_says_who_reads_the_whole_url(schema):
    channel = schema["components"]["schemas"]["WebhookDestination"]
    assert "webhook:write" in channel["properties"]["url"]["description"]
    assert "origin" in channel["properties"]["url"]["description"]
