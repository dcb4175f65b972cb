"""The journal and the delivery history read from a real streaming replica (pg_basebackup -R of
this worker's PostgreSQL, a hot standby on its own port: tests/servers.py StreamingReplica),
and a cursor serves every event exactly once whichever server answers each page
(docs/decisions/events.md "Reads from a replica"). Replay is paused to make the replica lag.

One replica per module (it takes a few seconds to copy and start); each test adds it to
DATABASES as the settings do for DATABASE_REPLICA_URL, and leaves it replaying."""

import random
import threading
import time

import pytest
from django.conf import settings as django_settings
from django.db import connections, transaction

from core.database.replica import REPLICA
from core.operations import health
from events.services import events_prune, record
from orders.services import order_complete, order_place
from tests.events.helpers import record_committed
from tests.events.test_event_positions import OpenTransaction
from tests.factories import old_events
from tests.servers import StreamingReplica, wait_for
from tests.webhooks.helpers import channel_for, record_order_completed
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", REPLICA])


@pytest.fixture(scope="module")
def streaming_replica(django_db_setup):
    """The standby, and DATABASES["replica"] for the module: the test database on it (what
    config/settings/base.py makes of DATABASE_REPLICA_URL; pytest-django makes no test database
    for a mirror). Set before the tests' database set-up, which checks their `databases`."""
    with StreamingReplica(int(django_settings.DATABASES["default"]["PORT"])) as replica:
        django_settings.DATABASES[REPLICA] = {
            **connections["default"].settings_dict,
            "PORT": replica.port,
            "CONN_MAX_AGE": 0,
            "TEST": {"MIRROR": "default"},
        }
        try:
            yield replica
        finally:
            connections[REPLICA].close()
            del connections[REPLICA]
            del django_settings.DATABASES[REPLICA]


@pytest.fixture(autouse=True)
def replica(streaming_replica, settings):
    """Caught up before each test; left running and replaying after it."""
    # Generous: a test makes the replica lag on purpose, never by slowness of the machine.
    settings.DATABASE_REPLICA_MAX_LAG_SECONDS = 300
    settings.DATABASE_REPLICA_RETRY_SECONDS = 0
    streaming_replica.catch_up()
    yield streaming_replica
    connections[REPLICA].close()
    if not streaming_replica.server.running():
        streaming_replica.server.start()
    streaming_replica.resume()


def get(client, url, params=None):
    """(body, server): the response's body, and which server read the page's rows."""
    on_replica = []

    def recorded(execute, sql, params, many, context):
        on_replica.append(sql)
        return execute(sql, params, many, context)

    # Not CaptureQueriesContext: it connects first, and a test stops the replica.
    with connections[REPLICA].execute_wrapper(recorded):
        response = client.get(url, params or {})
    assert response.status_code == 200, response.json()
    read_rows = any(table in sql for sql in on_replica for table in ROW_TABLES)
    return response.json(), REPLICA if read_rows else "primary"


ROW_TABLES = ('FROM "events_event"', 'FROM "webhooks_webhookdelivery"')


def ids(body):
    return [item["id"] for item in body["data"]]


def page(client, cursor=None, limit=100, url="/api/v2/events"):
    params = {"limit": limit} | ({"cursor": cursor} if cursor else {})
    body, server = get(client, url, params)
    return ids(body), body["meta"]["next_cursor"], body["meta"]["has_more"], server


def record_events(store, count, start=0):
    return [record_committed(store, subject=("coupon", str(start + n))).id for n in range(count)]


def wait_received(replica):
    """Until WAL the replica has not replayed has arrived (it is then measurably behind)."""
    wait_for(
        lambda: (
            replica.execute("SELECT pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn()") == "True"
        ),
        timeout=30,
        what="WAL received and not replayed",
    )


def test_a_cursor_serves_each_event_once_across_replica_primary_replica(
    auth_client, store, replica, settings
):
    replayed = record_events(store, 4)
    replica.catch_up()
    replica.pause()
    only_on_primary = record_events(store, 4, start=4)
    wait_received(replica)

    # a lagging replica (within the bound) answers the first page
    first, cursor, more, server = page(auth_client, limit=3)
    assert (first, more, server) == (replayed[:3], True, REPLICA)

    # too far behind now: the primary answers, past what the replica has
    settings.DATABASE_REPLICA_MAX_LAG_SECONDS = 0
    second, cursor, more, server = page(auth_client, cursor, limit=3)
    assert (second, more, server) == ([replayed[3], *only_on_primary[:2]], True, "primary")

    # caught up again: the replica answers from the primary's position on
    settings.DATABASE_REPLICA_MAX_LAG_SECONDS = 300
    replica.resume()
    replica.catch_up()
    third, cursor, more, server = page(auth_client, cursor, limit=3)
    assert (third, more, server) == (only_on_primary[2:], False, REPLICA)
    assert first + second + third == replayed + only_on_primary

    # and an idle journal keeps the replica answering, empty, without moving back
    fourth, _, more, server = page(auth_client, cursor)
    assert (fourth, more, server) == ([], False, REPLICA)


def test_a_replica_behind_the_cursor_leaves_the_page_to_the_primary(
    auth_client, store, replica, settings
):
    record_events(store, 2)
    replica.catch_up()
    replica.pause()
    behind = record_events(store, 2, start=2)
    wait_received(replica)
    # the primary's page (the replica too far behind): its cursor is past all the replica has
    settings.DATABASE_REPLICA_MAX_LAG_SECONDS = 0
    _, cursor, _, server = page(auth_client, limit=3)
    assert server == "primary"
    settings.DATABASE_REPLICA_MAX_LAG_SECONDS = 300
    after = record_events(store, 1, start=4)

    # within the lag bound, but the replica could only answer "nothing new": the primary does
    events, _, more, server = page(auth_client, cursor)
    assert (events, more, server) == ([behind[1], *after], False, "primary")


def test_the_replica_serves_below_its_own_replayed_horizon(auth_client, store, replica):
    """An open transaction on the primary holds the replica's horizon back too: a later
    committed event, replayed already, waits behind it there as on the primary."""
    earlier = OpenTransaction(store, "1")
    try:
        later = record_committed(store, subject=("coupon", "2"))
        replica.catch_up()
        events, cursor, more, server = page(auth_client)
        assert (events, more, server) == ([], False, REPLICA)
    finally:
        earlier.commit()
    replica.catch_up()

    events, _, _, server = page(auth_client, cursor)
    assert (events, server) == ([earlier.event_id, later.id], REPLICA)


def test_an_orders_events_read_from_the_replica(auth_client, store, replica):
    order = order_place(store=store, subtotal_cents=100)
    order_complete(order=order)
    record_committed(store, subject=("coupon", str(order.pk)))
    replica.catch_up()
    replica.pause()
    other = order_place(store=store, subtotal_cents=200)
    order_complete(order=other)
    wait_received(replica)

    body, server = get(auth_client, f"/api/v2/orders/{order.pk}/events")

    assert [(e["type"], e["subject"]["id"]) for e in body["data"]] == [
        ("order.completed", str(order.pk))
    ]
    assert server == REPLICA


def test_a_stopped_replica_leaves_reads_to_the_primary_and_the_web_ready(
    auth_client, api_client, store, replica, monkeypatch
):
    monkeypatch.setitem(
        health.READINESS_CHECKS, "replica", health._using_database(health.replica_check)
    )
    recorded = record_events(store, 2)
    replica.server.stop("immediate")

    events, _, _, server = page(auth_client)
    ready = api_client.get("/readyz")

    assert (events, server) == (recorded, "primary")
    assert ready.status_code == 200
    assert ready.json()["checks"]["replica"] == {
        "status": "ok",
        "replica": "unavailable",
        "lag_seconds": None,
    }

    replica.server.start()
    replica.catch_up()
    assert page(auth_client)[3] == REPLICA
    assert api_client.get("/readyz").json()["checks"]["replica"]["replica"] == "streaming"


def test_status_shows_a_replica_too_far_behind(api_client, store, replica, settings, monkeypatch):
    monkeypatch.setitem(
        health.STATUS_CHECKS, "replica", health._using_database(health.replica_check)
    )
    replica.pause()
    record_events(store, 1)
    wait_received(replica)
    settings.DATABASE_REPLICA_MAX_LAG_SECONDS = 0

    response = api_client.get("/status")

    check = response.json()["checks"]["replica"]
    assert (check["status"], check["replica"]) == ("ok", "behind")
    assert check["lag_seconds"] > 0
    assert "replica" not in response.json()["failing"]


def test_the_delivery_history_reads_from_the_replica(auth_client, store, receiver, replica):
    channel_for(store, receiver.url)
    replayed = WebhookDelivery.objects.get(event=record_order_completed(store, order_id=1))
    replica.catch_up()
    replica.pause()
    made_since = WebhookDelivery.objects.get(event=record_order_completed(store, order_id=2))
    wait_received(replica)

    listed, server = get(auth_client, "/api/v2/webhook-deliveries")
    assert (ids(listed), server) == ([str(replayed.pk)], REPLICA)
    detail, server = get(auth_client, f"/api/v2/webhook-deliveries/{replayed.pk}")
    assert (detail["data"]["id"], server) == (str(replayed.pk), REPLICA)
    # not replayed there yet: the primary has it
    detail, _ = get(auth_client, f"/api/v2/webhook-deliveries/{made_since.pk}")
    assert detail["data"]["id"] == str(made_since.pk)


def test_a_replica_behind_a_prune_does_not_expire_the_primarys_cursor(
    auth_client, store, replica, settings
):
    """A cursor issued after a prune the replica has not replayed carries a newer mark than
    the replica's: the replica must not take its older mark for a prune since the cursor."""
    retained = record_events(store, 2)  # txids below the pruned events' (occurred_at decides)
    old_events(store, 1)
    assert events_prune() == 1
    replica.catch_up()
    replica.pause()
    old_events(store, 1)
    assert events_prune() == 1  # on the primary only: the replica keeps the older mark
    wait_received(replica)
    settings.DATABASE_REPLICA_MAX_LAG_SECONDS = 0
    first, cursor, _, server = page(auth_client, limit=1)
    assert (first, server) == (retained[:1], "primary")
    settings.DATABASE_REPLICA_MAX_LAG_SECONDS = 300

    second, _, _, server = page(auth_client, cursor, limit=1)

    assert (second, server) == (retained[1:], REPLICA)


def test_concurrent_writers_and_a_poller_switching_servers_see_each_event_once(
    auth_client, api_key, store, replica, settings
):
    """Writers whose multi-event transactions interleave and commit out of order; the poller's
    pages come from the replica or the primary at random (replay paused and resumed, the lag
    bound switched), as in test_event_concurrency.py with one server."""
    recorded, errors, lock = [], [], threading.Lock()

    def writer(number):
        rng = random.Random(number)
        try:
            for n in range(15):
                with transaction.atomic():
                    ids = []
                    for k in range(rng.randint(1, 3)):
                        subject = ("coupon", f"{number}-{n}-{k}")
                        ids.append(record(store=store, type="coupon.updated", subject=subject).id)
                        time.sleep(rng.uniform(0, 0.02))
                    time.sleep(rng.uniform(0, 0.05))
                with lock:
                    recorded.extend(ids)
        except BaseException as error:
            errors.append(error)
        finally:
            connections.close_all()

    writers = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in writers:
        thread.start()
    rng, seen, servers, cursor = random.Random(0), [], set(), None
    while True:
        done = not any(thread.is_alive() for thread in writers)
        if done:  # the last pages: the replica replaying again and within the bound
            replica.resume()
            replica.catch_up()
            settings.DATABASE_REPLICA_MAX_LAG_SECONDS = 300
        else:
            if rng.random() < 0.2:
                replica.pause() if rng.random() < 0.5 else replica.resume()
            settings.DATABASE_REPLICA_MAX_LAG_SECONDS = rng.choice([0, 300])
        events, cursor, more, server = page(auth_client, cursor, limit=5)
        seen += events
        servers.add(server)
        if done and not more:
            break
        time.sleep(0.02)
    for thread in writers:
        thread.join(30)

    assert not errors, errors
    assert servers == {REPLICA, "primary"}
    assert len(seen) == len(set(seen)), "an event was served twice"
    assert sorted(seen) == sorted(recorded), "an event was skipped"
