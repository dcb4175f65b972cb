"""The sender connects to the address the SSRF check approved, and names the host everywhere else
(webhooks/dispatch/connection.py): no second lookup by the HTTP library (DNS rebinding), SNI, the
certificate check and the Host header of the original host, a pool per checked address, a checked
answer reused for a while and forgotten when it gets no answer, and the attempt's deadline over TLS
too. Against a real HTTPS receiver whose certificate a throwaway CA signed
(tests/webhooks/tls.py)."""

import base64
import time
import uuid

import pytest

from tests.webhooks.dns import FakeDns
from tests.webhooks.helpers import Receiver, Reply
from tests.webhooks.tls import CertificateAuthority
from webhooks.dispatch import sender

SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()


@pytest.fixture
def ca(tmp_path, settings):
    authority = CertificateAuthority(tmp_path)
    settings.WEBHOOKS_CA_BUNDLE = str(authority.bundle)  # the sender trusts the test CA
    return authority


@pytest.fixture
def tls_host():
    """A host name of the test's own: what one test's process kept of a host's answer is
    nothing to another's."""
    return f"hooks-{uuid.uuid4().hex[:12]}.example.test"


@pytest.fixture
def answers_kept(settings):
    """Checked answers serve a minute (the suite's settings keep none)."""
    settings.WEBHOOKS_CHECKED_ANSWER_SECONDS = 60


@pytest.fixture
def https_receiver(ca, tls_host):
    """An HTTPS receiver with a certificate for tls_host; `server_names` holds each
    handshake's SNI."""
    context = ca.server_context(tls_host)
    server_names = []
    context.sni_callback = lambda ssl_socket, name, ssl_context: server_names.append(name)
    server = Receiver(ssl_context=context)
    server.server_names = server_names
    yield server
    server.close()


@pytest.fixture
def dns(monkeypatch, settings, tls_host):
    settings.WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS = True  # the receiver is on loopback
    return FakeDns(monkeypatch, "127.0.0.1", host=tls_host)


def send(url: str, message_id: str = "msg_1") -> sender.SendResult:
    return sender.send(url=url, message_id=message_id, body=b"{}", secrets=[SECRET])


def test_https_reaches_the_checked_address_named_as_the_host(https_receiver, dns, tls_host):
    url = f"https://{tls_host}:{https_receiver.port}/hooks/in?key=1"

    result = send(url)

    # then: TLS verified the certificate for the name, the name was the SNI and the Host
    assert result.succeeded, result.error
    [request] = https_receiver.received()
    assert https_receiver.server_names == [tls_host]
    assert request.headers["Host"] == f"{tls_host}:{https_receiver.port}"
    assert request.path == "/hooks/in?key=1"
    # and the name was looked up once: by the check, not again by the HTTP library
    assert dns.lookups == 1


def test_a_certificate_for_another_name_is_a_tls_error(ca, dns, tls_host):
    # given: a receiver at the checked address whose certificate names another host
    impostor = Receiver(ssl_context=ca.server_context("other.example.test"))
    try:
        result = send(f"https://{tls_host}:{impostor.port}/hooks")
    finally:
        impostor.close()

    assert result.response_status is None
    assert result.error == f"TLS error: https://{tls_host}:{impostor.port}"
    assert impostor.received() == []


def test_an_untrusted_certificate_is_a_tls_error(https_receiver, dns, settings, tls_host):
    settings.WEBHOOKS_CA_BUNDLE = ""  # the default trust store: not the test CA

    result = send(f"https://{tls_host}:{https_receiver.port}/hooks")

    assert result.error == f"TLS error: https://{tls_host}:{https_receiver.port}"
    assert https_receiver.received() == []


def test_attempts_reuse_the_checked_answer_and_its_connection(
    https_receiver, dns, answers_kept, tls_host
):
    url = f"https://{tls_host}:{https_receiver.port}/hooks"

    first, second = send(url, "msg_1"), send(url, "msg_2")

    assert first.succeeded and second.succeeded
    # one lookup and one TLS connection served both (the pool of the checked address)
    assert dns.lookups == 1
    assert len({request.client_address for request in https_receiver.received()}) == 1
    assert https_receiver.server_names == [tls_host]


def test_a_rebinding_reaches_checked_addresses_only(
    https_receiver, dns, answers_kept, settings, tls_host
):
    settings.WEBHOOKS_CHECKED_ANSWER_SECONDS = 0.5
    url = f"https://{tls_host}:{https_receiver.port}/hooks"
    assert send(url, "msg_1").succeeded

    # when: the name now resolves to the cloud metadata address
    dns.address = "169.254.169.254"
    # then: while the checked answer lives, attempts go to the address that passed the check
    assert send(url, "msg_2").succeeded
    assert dns.lookups == 1
    # and once it expired, the name is looked up again and the new answer refused (a real
    # wait: the expiry runs on time.monotonic, which time-machine leaves alone)
    time.sleep(0.6)
    result = send(url, "msg_3")
    assert dns.lookups == 2
    assert result.response_status is None
    assert "cloud metadata" in result.error
    assert "169.254.169.254" not in result.error
    assert len(https_receiver.received()) == 2


def test_an_attempt_without_an_answer_forgets_the_checked_answer(ca, dns, answers_kept, tls_host):
    receiver = Receiver(ssl_context=ca.server_context(tls_host))
    receiver.respond = lambda request: Reply(headers={"Connection": "close"})
    url = f"https://{tls_host}:{receiver.port}/hooks"
    assert send(url, "msg_1").succeeded
    receiver.close()

    # when: the receiver is gone (it may have moved to another address)
    failed = send(url, "msg_2")

    # then: the next attempt looks the name up again
    assert failed.error == f"connection refused: https://{tls_host}:{receiver.port}"
    assert dns.lookups == 1
    send(url, "msg_3")
    assert dns.lookups == 2


def test_the_attempt_budget_holds_over_tls(https_receiver, dns, settings, tls_host):
    settings.WEBHOOKS_TIMEOUT_SECONDS = 1
    https_receiver.respond = lambda request: Reply(delay=3)

    started = time.monotonic()
    result = send(f"https://{tls_host}:{https_receiver.port}/hooks")
    elapsed = time.monotonic() - started

    assert result.response_status is None
    assert result.error.startswith("timeout"), result.error
    assert elapsed < 2, elapsed


def test_redirects_are_not_followed_over_tls(https_receiver, dns, tls_host):
    https_receiver.respond = lambda request: Reply(
        status=307, headers={"Location": "https://169.254.169.254/latest/meta-data/"}
    )

    result = send(f"https://{tls_host}:{https_receiver.port}/hooks")

    assert result.response_status == 307
    assert result.error == "HTTP 307"
    assert len(https_receiver.received()) == 1
