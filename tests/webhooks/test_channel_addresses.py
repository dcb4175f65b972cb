"""Channels cannot reach inside: one row per denied range, judged when the channel is
saved (PUT through the API) and when an attempt connects (the sender), and the save's DNS
lookup is bounded by WEBHOOKS_DNS_TIMEOUT_SECONDS even when the name server never answers."""

import ipaddress
import logging
import sys
import time

import pytest

from tests.servers import wait_for
from tests.webhooks.dns import HOST, PUBLIC_IPV4, FakeDns, stalled_name
from tests.webhooks.helpers import channel_for, record_order_completed
from webhooks.dispatch.attempts import delivery_send
from webhooks.models import WebhookChannel, WebhookDelivery

URL = "/api/v2/webhook-destination"

# (an address inside the range, the kind the refusal names); IANA IPv4 and IPv6
# Special-Purpose Address Registries, multicast, deprecated and reserved space, and IPv6
# addresses carrying an internal IPv4 address.
DENIED = [
    ("0.1.2.3", "'this network'"),
    ("0.0.0.0", "'this network'"),
    ("10.1.2.3", "private-use"),
    ("100.64.1.2", "shared address space"),
    ("100.100.100.200", "cloud metadata"),
    ("127.0.0.1", "loopback"),
    ("127.255.0.9", "loopback"),
    ("169.254.10.1", "link-local"),
    ("169.254.169.254", "cloud metadata"),
    ("172.16.5.4", "private-use"),
    ("172.31.255.254", "private-use"),
    ("192.0.0.1", "IPv4 service continuity prefix"),
    ("192.0.0.8", "IPv4 dummy address"),
    ("192.0.0.9", "PCP anycast"),
    ("192.0.0.10", "TURN anycast"),
    ("192.0.0.170", "NAT64/DNS64 discovery"),
    ("192.0.0.200", "IETF protocol assignments"),
    ("192.0.2.10", "documentation (TEST-NET-1)"),
    ("192.31.196.1", "AS112 anycast"),
    ("192.52.193.1", "AMT anycast"),
    ("192.88.99.1", "deprecated 6to4 relay anycast"),
    ("192.168.1.20", "private-use"),
    ("192.175.48.1", "AS112 direct delegation"),
    ("198.18.0.1", "benchmarking"),
    ("198.19.255.1", "benchmarking"),
    ("198.51.100.7", "documentation (TEST-NET-2)"),
    ("203.0.113.7", "documentation (TEST-NET-3)"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "limited broadcast"),
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("::8.8.8.8", "deprecated IPv4-compatible"),
    ("::10.0.0.1", "deprecated IPv4-compatible"),
    ("::ffff:10.0.0.1", "private-use, as the IPv4 address it carries"),
    ("::ffff:127.0.0.1", "loopback, as the IPv4 address it carries"),
    ("::ffff:0:192.168.0.1", "private-use, as the IPv4 address it carries"),  # SIIT
    ("64:ff9b::10.0.0.1", "private-use, as the IPv4 address it carries"),
    ("64:ff9b::127.0.0.1", "loopback, as the IPv4 address it carries"),
    ("64:ff9b:1::1", "local-use IPv4/IPv6 translation"),
    ("64:ff9b:1:a9fe:a9:fe00::", "cloud metadata"),  # 169.254.169.254 after a /48 prefix
    ("100::1", "discard-only"),
    ("100:0:0:1::1", "dummy IPv6 prefix"),
    ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "Teredo"),  # client 10.0.0.1
    ("2001:0:0a00:0001::3fff:f7fe", "Teredo"),  # server 10.0.0.1
    ("2001:0:0808:0808::b7b7:b7b7", "Teredo"),  # public server, client 72.72.72.72
    ("2001:1::1", "PCP anycast"),
    ("2001:1::2", "TURN anycast"),
    ("2001:1::3", "DNS-SD SRP anycast"),
    ("2001:2::1", "benchmarking"),
    ("2001:3::1", "AMT anycast"),
    ("2001:4:112::1", "AS112 anycast"),
    ("2001:10::1", "deprecated ORCHID"),
    ("2001:20::1", "ORCHIDv2"),
    ("2001:30::1", "drone remote ID entity tags"),
    ("2001:1ff::1", "IETF protocol assignments"),
    ("2001:db8::1", "documentation"),
    ("2002:0a00:0001::1", "private-use, as the IPv4 address it carries"),  # 6to4 of 10.0.0.1
    ("2002:7f00:0001::1", "loopback, as the IPv4 address it carries"),
    ("2002:a9fe:a9fe::1", "cloud metadata"),
    ("2620:4f:8000::1", "AS112 direct delegation"),
    ("3fff::1", "documentation"),
    ("5f00::1", "segment routing (SRv6) SIDs"),
    ("fc00::1", "unique-local"),
    ("fd12:3456::1", "unique-local"),
    ("fd00:ec2::254", "cloud metadata"),
    ("fe80::1", "link-local"),
    ("fec0::1", "deprecated site-local"),
    ("ff02::1", "multicast"),
    ("4000::1", "reserved IPv6"),
    ("::ffff:0:0:0:1", "reserved IPv6"),
]
ALLOWED = [
    PUBLIC_IPV4,
    "8.8.8.8",
    "2606:4700:4700::1111",
    "::ffff:8.8.8.8",  # IPv4-mapped public
    "64:ff9b::8.8.8.8",  # NAT64 of a public IPv4 (IPv6-only networks reach it this way)
    "2002:0808:0808::1",  # 6to4 of a public IPv4
]
# Refused even with WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS (dev, tests), wrapped or not.
ALWAYS_DENIED = [
    ("169.254.10.1", "link-local"),
    ("169.254.169.254", "cloud metadata"),
    ("fe80::1", "link-local"),
    ("fd00:ec2::254", "cloud metadata"),
    ("100.100.100.200", "cloud metadata"),
    ("::ffff:169.254.169.254", "cloud metadata"),
    ("::169.254.10.1", "link-local, as the IPv4 address it carries"),
    ("::ffff:0:169.254.10.1", "link-local, as the IPv4 address it carries"),
    ("2001:0:a9fe:0a01::3fff:f7fe", "link-local, as the IPv4 address it carries"),  # server
    ("64:ff9b::169.254.10.1", "link-local, as the IPv4 address it carries"),
    ("64:ff9b:1:a9fe:a9:fe00::", "cloud metadata"),
    ("2002:a9fe:a9fe::1", "cloud metadata"),
    ("2001:0:4136:e378:8000:63bf:5601:5601", "cloud metadata"),  # Teredo client 169.254.169.254
]


def spellings(address: str) -> set[str]:
    """Every way the address (and an IPv4 address it carries) could show up in a message."""
    parsed = ipaddress.ip_address(address)
    forms = {address, str(parsed)}
    if parsed.version == 6:
        forms |= {parsed.exploded, str(ipaddress.IPv4Address(int(parsed) & 0xFFFFFFFF))}
    return forms


@pytest.fixture
def dev_flag(settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS = True


# The path of a channel URL may hold a credential (hooks.slack.com/services/...): no log
# line may carry it.
PATH = "/services/T0001/B0002/path-credential-x7Kq"


def put(client, url=f"https://{HOST}{PATH}"):
    return client.put(URL, {"url": url, "event_types": ["order.completed"]}, format="json")


def name_refusal(host=HOST, bound=2):
    """The one refusal of a name, whatever its lookup found."""
    return f"host {host} did not resolve within {bound:g} s to public internet addresses only"


@pytest.fixture
def refusal_log(caplog):
    """The operators' log lines of the save-time URL check (INFO and up)."""
    caplog.set_level(logging.INFO, logger="webhooks.channels.serializers")

    def lines() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "webhooks.channels.serializers"]

    return lines


def assert_refused_without_saying_why(response, refusal_log, address, kind):
    """The caller reads the one refusal of a name; the operators' log has the address and
    its kind of range, and the host, but not the URL's path."""
    assert response.status_code == 422, response.json()
    body = response.json()
    assert body["param"] == "url"
    assert body["errors"]["url"] == [name_refusal()]
    assert body["message"] == f"url: {name_refusal()}"
    for form in spellings(address):
        assert form not in response.content.decode(), form
    assert not WebhookChannel.objects.exists()
    [line] = refusal_log()
    assert HOST in line
    assert f"{address} ({kind}" in line
    assert PATH.rsplit("/", 1)[-1] not in line


@pytest.mark.parametrize(("address", "kind"), DENIED, ids=[row[0] for row in DENIED])
def test_put_refuses_a_host_resolving_into_a_denied_range(
    auth_client, production, monkeypatch, refusal_log, address, kind
):
    FakeDns(monkeypatch, address)

    response = put(auth_client)

    assert_refused_without_saying_why(response, refusal_log, address, kind)


@pytest.mark.parametrize(("address", "kind"), ALWAYS_DENIED, ids=[r[0] for r in ALWAYS_DENIED])
def test_put_refuses_link_local_and_metadata_even_with_the_dev_flag(
    auth_client, dev_flag, monkeypatch, refusal_log, address, kind
):
    FakeDns(monkeypatch, address)

    response = put(auth_client)

    assert_refused_without_saying_why(response, refusal_log, address, kind)


@pytest.mark.parametrize("address", ALLOWED)
def test_put_accepts_a_host_resolving_to_a_public_address(
    auth_client, production, monkeypatch, address
):
    FakeDns(monkeypatch, address)

    response = put(auth_client)

    assert response.status_code == 201, response.json()


def test_put_refuses_an_ipv4_literal_in_a_denied_range(auth_client, production):
    response = put(auth_client, "https://10.20.30.40/in")

    assert response.status_code == 422
    assert response.json()["errors"]["url"] == [
        "host 10.20.30.40 is an address webhooks may not reach (private-use); only public "
        "internet addresses are allowed"
    ]


def test_put_refusal_does_not_tell_an_unknown_name_from_a_stalled_or_an_internal_one(
    auth_client, production, monkeypatch, unresponsive_name_server, refusal_log, settings
):
    """Which names resolve, and to what kind of internal address, is the
    operators' knowledge; the caller reads one refusal for every name that fails the check."""
    settings.WEBHOOKS_DNS_TIMEOUT_SECONDS = 0.5
    unknown, stalled, internal = "unknown.example.com", stalled_name(), "intranet.example.com"
    FakeDns(monkeypatch, None, host=unknown)
    FakeDns(monkeypatch, "172.20.1.9", host=internal)

    responses = {
        host: put(auth_client, f"https://{host}{PATH}") for host in (unknown, stalled, internal)
    }

    for host, response in responses.items():
        assert response.status_code == 422, response.json()
        assert response.json()["errors"]["url"] == [name_refusal(host, 0.5)]
    # the operators' log tells them apart, without the path
    unknown_line, stalled_line, internal_line = refusal_log()
    assert f"host {unknown} refused: does not resolve" in unknown_line
    assert "Name or service not known" in unknown_line
    assert f"host {stalled} refused: does not resolve" in stalled_line
    assert "longer than 0.5 s" in stalled_line
    assert f"host {internal} refused: resolves to 172.20.1.9 (private-use)" in internal_line
    for line in refusal_log():
        assert "path-credential" not in line


# --- send time: the address the attempt connects to --------------------------------------

_connects: list | None = None


def _record_connects(event, args):
    if event == "socket.connect" and _connects is not None:
        _connects.append(args[1])


sys.addaudithook(_record_connects)


@pytest.fixture
def connects():
    """Every address a socket of this process connects to during the test (audit events)."""
    global _connects
    _connects = []
    yield _connects
    _connects = None


def attempt_refused_at_connect(store, monkeypatch, address):
    # given a channel saved while its host resolved to a public address
    dns = FakeDns(monkeypatch, PUBLIC_IPV4)
    channel_for(store, f"https://{HOST}{PATH}")
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    # when the host resolves into a denied range at send time (DNS rebinding)
    dns.address = address
    outcome = delivery_send(delivery_id=delivery.pk)
    return outcome, delivery.attempt_records.get()


@pytest.mark.parametrize(("address", "kind"), DENIED, ids=[row[0] for row in DENIED])
def test_send_refuses_to_connect_into_a_denied_range(
    store, production, monkeypatch, connects, address, kind
):
    outcome, attempt = attempt_refused_at_connect(store, monkeypatch, address)

    # then no connection was opened, the attempt failed (to be retried), naming the kind only
    assert outcome == "pending"
    assert not [peer for peer in connects if peer[0] == address]
    assert attempt.response_status is None
    assert kind in attempt.error
    for form in spellings(address):
        assert form not in attempt.error, form


def test_a_refusal_at_connect_is_logged_with_the_host_but_not_the_path(
    store, production, monkeypatch, caplog
):
    caplog.set_level(logging.INFO, logger="webhooks.dispatch.connection")

    attempt_refused_at_connect(store, monkeypatch, "10.1.2.3")

    [line] = [r.getMessage() for r in caplog.records if r.name == "webhooks.dispatch.connection"]
    assert f"host {HOST} refused: 10.1.2.3 is" in line
    assert "(private-use)" in line
    assert "path-credential" not in line


def test_delivery_history_does_not_show_why_a_connection_was_refused(
    auth_client, store, production, monkeypatch
):
    """The attempt's stored error names the kind of range (operators read it in the admin);
    the delivery API shows the caller no attempt error, so no kind and no address."""
    _, attempt = attempt_refused_at_connect(store, monkeypatch, "10.1.2.3")
    assert "private-use" in attempt.error

    response = auth_client.get(f"/api/v2/webhook-deliveries/{attempt.delivery_id}")

    assert response.status_code == 200
    assert response.json()["data"]["response_status"] is None
    for text in ("private-use", "10.1.2.3", "may not reach", "refused"):
        assert text not in response.content.decode(), text


@pytest.mark.parametrize(("address", "kind"), ALWAYS_DENIED, ids=[r[0] for r in ALWAYS_DENIED])
def test_send_refuses_link_local_and_metadata_even_with_the_dev_flag(
    store, settings, monkeypatch, connects, address, kind
):
    settings.WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS = False  # lets the save pass the public check
    dns = FakeDns(monkeypatch, PUBLIC_IPV4)
    channel_for(store, f"https://{HOST}/hooks")
    delivery = WebhookDelivery.objects.get(event=record_order_completed(store))
    settings.WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS = True
    dns.address = address

    delivery_send(delivery_id=delivery.pk)

    assert not [peer for peer in connects if peer[0] == address]
    assert kind in delivery.attempt_records.get().error


# --- the save's DNS lookup is bounded -----------------------------------------------------


def test_the_dns_bound_defaults_to_at_most_two_seconds(settings):
    assert 0 < settings.WEBHOOKS_DNS_TIMEOUT_SECONDS <= 2


def test_put_answers_422_when_the_name_server_never_answers(
    auth_client, production, unresponsive_name_server, settings
):
    bound = settings.WEBHOOKS_DNS_TIMEOUT_SECONDS
    name = stalled_name()

    started = time.monotonic()
    response = put(auth_client, f"https://{name}/in")
    elapsed = time.monotonic() - started

    assert response.status_code == 422, response.json()
    body = response.json()
    assert body["param"] == "url"
    assert body["errors"]["url"] == [name_refusal(name, bound)]
    # the lookup really went out and stalled; the request ended near the bound, not the
    # stub's 120 s
    assert name.split(".")[0].encode() in unresponsive_name_server.received(1)[0]
    assert bound <= elapsed < bound + 5
    assert not WebhookChannel.objects.exists()


def test_stalled_lookups_do_not_hold_up_later_puts(
    auth_client, production, unresponsive_name_server, settings, monkeypatch
):
    """More stalled saves than lookup threads: each still answers within its bound, and once
    the name server recovers a save resolves again (stalled lookups left no queue behind)."""
    settings.WEBHOOKS_DNS_TIMEOUT_SECONDS = 0.5
    for _ in range(6):
        started = time.monotonic()
        response = put(auth_client, f"https://{stalled_name()}/in")
        assert response.status_code == 422
        assert time.monotonic() - started < 5

    unresponsive_name_server.release()
    FakeDns(monkeypatch, PUBLIC_IPV4)
    # The released lookups end a moment later (their getaddrinfo returns): until then the
    # store's lookups are at their bound and a save is refused at once (ResolverBusy).
    wait_for(
        lambda: put(auth_client).status_code == 201,
        timeout=5,
        what="a save resolving once the name server answers again",
    )
