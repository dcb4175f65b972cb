"""Stalled DNS lookups take no one else's capacity: a host whose name server
never answers is looked up once while its lookup is in flight, a store holds a bounded number of
lookup threads, and a lookup of another host or of an IP literal never waits behind them.

The stalling resolver is tests.webhooks.dns.UnresponsiveNameServer: a real UDP name server that
never answers, queried by a stub in place of getaddrinfo (DNS is outside the system)."""

import os
import socket
import threading
import time

import pytest

from tests.factories import MembershipFactory, UserFactory, make_api_key
from tests.servers import wait_for
from tests.webhooks.dns import HOST, PUBLIC_IPV4, FakeDns, stalled_name
from tests.webhooks.helpers import channel_for, record_order_completed
from webhooks.dispatch import connection
from webhooks.dispatch.attempts import delivery_send
from webhooks.models import WebhookChannel, WebhookDelivery

URL = "/api/v2/webhook-destination"
# More stalled lookups than the resolver had threads before (4).
STALLED_LOOKUPS = 6


@pytest.fixture(autouse=True)
def short_dns_bound(settings):
    """A stalled lookup gives up after half a second: each stall costs the test that much."""
    settings.WEBHOOKS_DNS_TIMEOUT_SECONDS = 0.5


def put(client, url):
    return client.put(URL, {"url": url, "event_types": ["order.completed"]}, format="json")


def stall(client, names):
    """Saves refused because each name's lookup stalls; each answers within the DNS bound."""
    for name in names:
        started = time.monotonic()
        assert put(client, f"https://{name}/in").status_code == 422
        assert time.monotonic() - started < 5


def test_stalled_lookups_of_one_host_do_not_fail_a_lookup_of_another_host(
    auth_client, production, unresponsive_name_server, monkeypatch
):
    # given more stalled lookups of one host than the resolver once had threads, still stalled
    name = stalled_name()
    stall(auth_client, [name] * STALLED_LOOKUPS)
    FakeDns(monkeypatch, PUBLIC_IPV4)

    # when a save names another host, then the lookup of that host is answered
    response = put(auth_client, f"https://{HOST}/in")

    assert response.status_code == 201, response.json()
    assert unresponsive_name_server.received(1)  # the stalled lookup went out


def test_stalled_lookups_do_not_fail_an_ip_literal(
    auth_client, production, unresponsive_name_server
):
    stall(auth_client, [stalled_name() for _ in range(STALLED_LOOKUPS)])

    response = put(auth_client, f"https://{PUBLIC_IPV4}/in")

    assert response.status_code == 201, response.json()


def test_a_stalled_host_is_looked_up_once_while_its_lookup_is_in_flight(
    auth_client, production, unresponsive_name_server
):
    name = stalled_name()

    stall(auth_client, [name] * STALLED_LOOKUPS)

    # then the name server got one query: every later save waited on the lookup in flight
    queries = unresponsive_name_server.received_within(0.5)
    assert len(queries) == 1, queries
    assert name.split(".")[0].encode() in queries[0]


def test_a_stalled_lookup_that_ends_is_looked_up_afresh(
    auth_client, production, unresponsive_name_server
):
    name = stalled_name()
    stall(auth_client, [name])
    assert unresponsive_name_server.received(1)  # its query went out
    unresponsive_name_server.release()  # the name server answers (garbage): the lookup ends

    def looked_up_afresh():
        # A save that comes before the lookup thread has taken the answer still joins that
        # lookup (it is in flight until then); the first save after it sends a new query.
        stall(auth_client, [name])
        return unresponsive_name_server.received_within(0.2)

    queries = wait_for(looked_up_afresh, timeout=10, what="a new query for the released name")
    assert len(queries) == 1, queries


def test_a_store_holds_a_bounded_number_of_lookups_and_others_still_resolve(
    auth_client, production, unresponsive_name_server, monkeypatch, client_for
):
    # given a process allowed one lookup more than a store may hold
    monkeypatch.setattr(connection, "DNS_LOOKUPS_PER_STORE", 4)
    monkeypatch.setattr(connection, "DNS_LOOKUP_THREADS_MAX", 5)
    # when one store saves channels on ten different stalling hosts
    stall(auth_client, [stalled_name(f"h{number}") for number in range(10)])

    # then only four of its lookups went out (the other saves were refused without one)
    assert len(unresponsive_name_server.received_within(0.5)) == 4
    # and another store's save still gets its lookup
    other_owner = UserFactory()
    other_store = MembershipFactory(user=other_owner).store
    FakeDns(monkeypatch, PUBLIC_IPV4)
    response = put(client_for(make_api_key(other_owner)), f"https://{HOST}/in")
    assert response.status_code == 201, response.json()
    assert WebhookChannel.objects.filter(store=other_store).exists()


def test_a_delivery_to_an_ip_literal_is_sent_while_lookups_stall(
    auth_client, production, unresponsive_name_server, settings, other_store, receiver
):
    # given stalled lookups in this process (the one that sends)
    stall(auth_client, [stalled_name() for _ in range(STALLED_LOOKUPS)])
    # when a delivery to a receiver named by its IP literal is sent
    settings.WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS = True  # the receiver listens on 127.0.0.1
    settings.WEBHOOKS_TIMEOUT_SECONDS = 2
    channel_for(other_store, receiver.url)
    delivery = WebhookDelivery.objects.get(event=record_order_completed(other_store))

    outcome = delivery_send(delivery_id=delivery.pk)

    # then it reached the receiver
    assert outcome == "succeeded", delivery.attempt_records.get().error
    assert len(receiver.received()) == 1


def test_a_forked_child_does_not_wait_on_its_parents_lookups(monkeypatch):
    """A Celery prefork child inherits none of its parent's lookup threads: a lookup the parent
    has in flight is looked up afresh by the child, not waited on."""
    parent = os.getpid()
    stalled = threading.Event()
    release = threading.Event()
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host != HOST:
            return real(host, port, *args, **kwargs)
        if os.getpid() == parent:
            stalled.set()
            release.wait(30)
            raise socket.gaierror(socket.EAI_AGAIN, "stalled in the parent")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC_IPV4, 443))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    with pytest.raises(socket.gaierror):
        connection.resolve(HOST, timeout=0.2)
    assert stalled.wait(5)
    read_end, write_end = os.pipe()
    try:
        child = os.fork()
        if child == 0:  # pragma: no cover (runs in the child)
            try:
                answer = ",".join(connection.resolve(HOST, timeout=2)).encode()
            except BaseException as error:
                answer = repr(error).encode()
            os.write(write_end, answer)
            os._exit(0)
        os.close(write_end)
        _, status = os.waitpid(child, 0)
        answer = os.read(read_end, 1000).decode()
    finally:
        release.set()
        os.close(read_end)

    assert os.waitstatus_to_exitcode(status) == 0
    assert answer == PUBLIC_IPV4
