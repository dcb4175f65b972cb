"""A stored attempt error names the failure's kind and the channel's origin, never the
URL's path or query, which can be a credential (docs/decisions/hardening.md
"Hardening III"). Each kind is a real local failure."""

import socket
import threading
from importlib import import_module

import pytest

from tests.webhooks.dns import HOST, FakeDns
from tests.webhooks.helpers import channel_for, record_order_completed
from webhooks.dispatch.attempts import delivery_send
from webhooks.models import WebhookDelivery, WebhookDeliveryAttempt

SECRET_PATH = "hook-P4THs3cr3t"
SECRET_TOKEN = "T0KENs3cr3t"


pytestmark = pytest.mark.usefixtures("quick_schedule")


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def listener():
    """A socket that listens and never accepts: the kernel completes the connection, nobody
    answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


@pytest.fixture
def plain_server():
    """A plain-text server: whatever a client sends, it answers an HTTP line, never TLS."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)

    def serve():
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def secret_url(origin: str) -> str:
    return f"{origin}/{SECRET_PATH}/x?token={SECRET_TOKEN}"


def attempt_error(store, origin: str) -> str:
    channel_for(store, secret_url(origin))
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    assert delivery_send(delivery_id=delivery.pk) == "pending"
    return WebhookDeliveryAttempt.objects.get(delivery=delivery).error


@pytest.mark.parametrize("private_allowed", [True, False], ids=["dev", "production"])
def test_the_stored_error_and_the_admin_page_hold_no_path_or_query(
    store, settings, private_allowed, admin_client
):
    # given a channel whose path and query are credentials, on the discard port
    channel_for(store, secret_url("http://127.0.0.1:9"))
    # production refuses the loopback address at send time; development tries it
    settings.WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS = private_allowed
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    # when the attempt fails
    assert delivery_send(delivery_id=delivery.pk) == "pending"

    # then neither the stored error nor the admin's attempts inline shows a secret
    error = WebhookDeliveryAttempt.objects.get(delivery=delivery).error
    assert error
    assert SECRET_PATH not in error and SECRET_TOKEN not in error
    page = admin_client.get(f"/admin/webhooks/webhookdelivery/{delivery.pk}/change/")
    assert page.status_code == 200
    assert error in page.content.decode()
    assert SECRET_PATH.encode() not in page.content
    assert SECRET_TOKEN.encode() not in page.content


def test_a_closed_port_is_connection_refused(store):
    port = closed_port()
    assert attempt_error(store, f"http://127.0.0.1:{port}") == (
        f"connection refused: http://127.0.0.1:{port}"
    )


def test_an_unresolvable_name_is_a_dns_failure(store, monkeypatch):
    # the name resolves while the channel is saved, and no longer when it is sent to
    dns = FakeDns(monkeypatch, "127.0.0.1")
    channel_for(store, secret_url(f"http://{HOST}:{closed_port()}"))
    dns.address = None
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))

    assert delivery_send(delivery_id=delivery.pk) == "pending"

    error = WebhookDeliveryAttempt.objects.get(delivery=delivery).error
    assert error.startswith(f"DNS failure: http://{HOST}:")
    assert SECRET_PATH not in error and SECRET_TOKEN not in error


def test_a_tls_handshake_against_a_plain_server_is_a_tls_error(store, plain_server):
    origin = f"https://127.0.0.1:{plain_server}"
    assert attempt_error(store, origin) == f"TLS error: {origin}"


def test_a_server_that_never_answers_is_a_timeout(store, listener):
    error = attempt_error(store, f"http://127.0.0.1:{listener}")
    assert error.startswith("timeout")
    assert SECRET_PATH not in error and SECRET_TOKEN not in error


OLD_ERRORS = {
    # urllib3's texts as attempts stored them before the fix, and what the migration leaves
    f"HTTPConnectionPool(host='127.0.0.1', port=9): Max retries exceeded with url: "
    f"/{SECRET_PATH}/x?token={SECRET_TOKEN} (Caused by NewConnectionError(': Failed to "
    "establish a new connection: [Errno 111] Connection refused'))": (
        "connection refused: http://127.0.0.1:9"
    ),
    f"HTTPSConnectionPool(host='hooks.example.com', port=443): Max retries exceeded with url: "
    f'/{SECRET_PATH}?token={SECRET_TOKEN} (Caused by NameResolutionError("Failed to resolve '
    "'hooks.example.com'\"))": "DNS failure: https://hooks.example.com:443",
    f"HTTPSConnectionPool(host='hooks.example.com', port=443): Read timed out. (read "
    f"timeout=10) url: /{SECRET_PATH}?token={SECRET_TOKEN}": (
        "timeout: https://hooks.example.com:443"
    ),
}


def test_errors_stored_before_the_fix_are_rewritten_by_their_migration(store):
    # given attempts stored with urllib3's text (path and query included), and a newer one
    from django.apps import apps

    migration = import_module("webhooks.migrations.0008_scrub_stored_attempt_errors")
    channel_for(store, secret_url("http://127.0.0.1:9"))
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    for number, old_error in enumerate([*OLD_ERRORS, "HTTP 500"], start=1):
        WebhookDeliveryAttempt.objects.create(
            delivery=delivery,
            delivery_event_occurred_at=delivery.event_occurred_at,
            number=number,
            origin="http://127.0.0.1:9",
            error=old_error,
        )

    # when the migration runs
    migration.scrub(apps, None)

    # then each old text is its kind and origin, and the others are left alone
    errors = list(
        WebhookDeliveryAttempt.objects.filter(delivery=delivery)
        .order_by("number")
        .values_list("error", flat=True)
    )
    assert errors == [*OLD_ERRORS.values(), "HTTP 500"]
    assert not any(SECRET_PATH in error or SECRET_TOKEN in error for error in errors)
