"""webhooks/sender.py overrides private parts of urllib3 (held to one minor in pyproject.toml):
HTTPConnection._new_conn and its _dns_host (resolve, check and connect to the checked address:
the SSRF guard) and HTTPConnectionPool._get_conn (every connection of an attempt under its
deadline). A urllib3 release that renames them or stops calling them would silently turn off
the guard or the deadline; these tests fail first, on the upgrade that does it."""

import base64
import inspect

from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from webhooks import sender

SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()


def test_urllib3_still_has_the_private_methods_the_sender_overrides():
    # _new_conn(self) -> socket and _get_conn(self, timeout=None), as sender.py overrides them
    assert "_new_conn" in vars(HTTPConnection)
    assert list(inspect.signature(HTTPConnection._new_conn).parameters) == ["self"]
    assert "_get_conn" in vars(HTTPConnectionPool)
    assert list(inspect.signature(HTTPConnectionPool._get_conn).parameters) == [
        "self",
        "timeout",
    ]
    # HTTPS reaches the socket through the same method (no _new_conn of its own to bypass ours)
    assert "_new_conn" not in vars(HTTPSConnection)
    assert "_get_conn" not in vars(HTTPSConnectionPool)


def test_urllib3_still_resolves_the_name_in_dns_host():
    # the override resolves self._dns_host: the name as given (a trailing dot kept for DNS),
    # while .host, stripped of it, is what the Host header and certificate check use
    connection = HTTPConnection("hooks.example.com.", 443)
    assert connection._dns_host == "hooks.example.com."
    assert connection.host == "hooks.example.com"


def test_the_overridden_connect_is_on_the_send_path(receiver, settings):
    # given: a loopback destination, which the SSRF check refuses without the dev flag
    settings.WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS = False

    # when
    result = sender.send(url=receiver.url, message_id="msg_1", body=b"{}", secrets=[SECRET])

    # then: the check ran where the connection is opened, and nothing reached the address
    assert result.response_status is None
    assert "loopback" in result.error
    assert receiver.received() == []


def test_the_overridden_pool_checkout_is_on_the_send_path(receiver, settings):
    # given: a destination that answers
    settings.WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS = True

    # when: one attempt under a deadline
    with sender.AttemptDeadline(5) as deadline:
        result = sender._post(url=receiver.url, message_id="msg_2", body=b"{}", secrets=[SECRET])

    # then: the connection it used was handed to the deadline (which can cut it)
    assert result.succeeded
    assert len(deadline._connections) == 1
    assert isinstance(deadline._connections[0], sender.CheckedHTTPConnection)
