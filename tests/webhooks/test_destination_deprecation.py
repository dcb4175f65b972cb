"""/api/v2/webhook-destination stays one release as a deprecated alias of the store's first
channel: every answer, errors included, carries Deprecation (RFC 9745), Sunset
(RFC 8594) and the successor's Link, and the schema marks its operations deprecated."""

from email.utils import parsedate_to_datetime

import pytest

from webhooks.models import WebhookChannel

pytestmark = pytest.mark.django_db

URL = "/api/v2/webhook-destination"


def assert_deprecated(response):
    assert response["Deprecation"].startswith("@") and int(response["Deprecation"][1:]) > 0
    sunset = parsedate_to_datetime(response["Sunset"])
    assert sunset.timestamp() > int(response["Deprecation"][1:])
    assert response["Link"] == '</api/v2/webhook-channels>; rel="successor-version"'


def test_every_answer_of_the_alias_says_it_is_deprecated(auth_client, receiver):
    missing = auth_client.get(URL)
    created = auth_client.put(
        URL, {"url": receiver.url, "event_types": ["order.completed"]}, format="json"
    )
    read = auth_client.get(URL)

    assert (missing.status_code, created.status_code, read.status_code) == (404, 201, 200)
    for response in (missing, created, read):
        assert_deprecated(response)
    # the alias manages a channel, which the channel endpoints list
    channel = WebhookChannel.objects.get()
    listed = auth_client.get("/api/v2/webhook-channels").json()["data"]
    assert [item["id"] for item in listed] == [str(channel.uid)]
    assert "Deprecation" not in auth_client.get("/api/v2/webhook-channels")


def test_the_schema_marks_the_alias_deprecated(auth_client):
    schema = auth_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()

    operations = schema["paths"]["/api/v2/webhook-destination"]
    assert {method: op.get("deprecated") for method, op in operations.items()} == {
        "get": True,
        "put": True,
        "delete": True,
    }
    assert not schema["paths"]["/api/v2/webhook-channels"]["get"].get("deprecated")
