"""A noisy neighbour on real processes: the web served as docs/production.md runs it (gunicorn
with config/gunicorn.conf.py, production settings, two worker processes) while one tenant sends
test events back to back to receivers that accept the connection and never answer. Another
tenant's requests keep their speed (docs/decisions/hardening.md, Hardening V 1)."""

import itertools
import json
import os
import statistics
import subprocess
import sys
import time

import pytest
import requests
from django.db import connection

from tests.factories import (
    CouponFactory,
    MembershipFactory,
    StoreFactory,
    UserFactory,
    WebhookChannelFactory,
    make_api_key,
)
from tests.servers import Gunicorn
from tests.webhooks.helpers import SilentReceiver

pytestmark = pytest.mark.django_db(transaction=True)

# The tenant's stores: more than one, so that the per-process cap is what holds it, not only the
# one test send in flight per store.
NOISY_STORES = 3
NOISY_THREADS = 6
IDLE_REQUESTS = 40
# Each key's budget: the noisy tenant's client keeps to it.
RATE_LIMIT_PER_MINUTE = 600
QUIET_KEYS = 4
LOADED_SECONDS = 3.0
SLOWEST_SECONDS = 2.0
P95_FACTOR = 5


# The noisy tenant's client: argv base URL, API key, seconds, threads, requests per second,
# then slug=channel_id pairs. Each thread sends its next test event as soon as it has its
# answer and the client's pace (its rate limit) allows; prints how many answers of each status
# it got.
NOISY_CLIENT = """
import collections, json, sys, threading, time
import requests

base, key, seconds, threads, per_second, *targets = sys.argv[1:]
targets = [target.split("=") for target in targets]
until = time.monotonic() + float(seconds)
answers = collections.Counter()
pace = threading.Lock()
next_at = [time.monotonic()]

def send_test_events(index):
    session = requests.Session()
    while True:
        with pace:
            start_at = next_at[0]
            next_at[0] = max(start_at, time.monotonic()) + 1 / float(per_second)
        time.sleep(max(0.0, start_at - time.monotonic()))
        if time.monotonic() >= until:
            return
        slug, channel_id = targets[index % len(targets)]
        index += 1
        try:
            response = session.post(
                f"{base}/api/v2/webhook-channels/{channel_id}/test",
                json={"event": "order.completed"},
                headers={"Authorization": f"Bearer {key}", "Host": "127.0.0.1", "X-STORE": slug},
                timeout=30,
            )
        except requests.RequestException:
            continue
        answers[str(response.status_code)] += 1

threads = [threading.Thread(target=send_test_events, args=(i,)) for i in range(int(threads))]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps(answers))
"""


def database_url() -> str:
    settings_dict = connection.settings_dict  # the test database
    return (
        f"postgres://{settings_dict['USER']}@{settings_dict['HOST']}:{settings_dict['PORT']}"
        f"/{settings_dict['NAME']}"
    )


@pytest.fixture(scope="module")
def web(django_db_setup, django_db_blocker, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("test-send-neighbours")
    with django_db_blocker.unblock():
        server = Gunicorn(
            workdir / "gunicorn.log",
            workers=None,  # WEB_CONCURRENCY's
            config_file=True,
            WEB_CONCURRENCY="2",
            DATABASE_URL=database_url(),
            REDIS_URL=os.environ["STOREFRONT_TEST_CACHE_URL"],
            WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS="true",  # the receivers are on 127.0.0.1
            API_RATE_LIMIT_PER_MINUTE=str(RATE_LIMIT_PER_MINUTE),
            LOG_LEVEL="WARNING",
        )
        with server:
            yield server


@pytest.fixture
def silent_receiver():
    receiver = SilentReceiver()
    yield receiver
    receiver.close()


def p95(seconds: list[float]) -> float:
    return statistics.quantiles(seconds, n=20)[-1]


def test_a_tenant_sending_test_events_to_a_hanging_receiver_slows_no_one_else(web, silent_receiver):
    # given: a noisy tenant whose stores' channels lead to a receiver that never answers
    noisy = UserFactory()
    noisy_stores = [StoreFactory() for _ in range(NOISY_STORES)]
    channels = []
    for store in noisy_stores:
        MembershipFactory(user=noisy, store=store, role="owner")
        channel = WebhookChannelFactory(store=store, url=f"{silent_receiver.url}/{store.slug}")
        channels.append((store.slug, channel.uid))
    noisy_key = make_api_key(noisy)
    # and a quiet tenant listing its coupons
    quiet = UserFactory()
    quiet_store = StoreFactory()
    MembershipFactory(user=quiet, store=quiet_store, role="owner")
    CouponFactory.create_batch(15, store=quiet_store)
    # Several keys: its requests of the whole run are more than one key's budget in a minute.
    quiet_keys = itertools.cycle([make_api_key(quiet) for _ in range(QUIET_KEYS)])
    quiet_session = requests.Session()

    def quiet_request() -> float:
        started = time.monotonic()
        try:
            response = quiet_session.get(
                f"{web.base}/api/v1/coupons",
                headers={"Authorization": f"Bearer {next(quiet_keys)}", "Host": "127.0.0.1"},
                timeout=15,
            )
        except requests.Timeout:
            return float("inf")
        assert response.status_code == 200, response.text
        return time.monotonic() - started

    for _ in range(8 * QUIET_KEYS):  # each process reads the credentials, warms its connections
        quiet_request()
    idle = [quiet_request() for _ in range(IDLE_REQUESTS)]

    # when: the noisy tenant sends test events back to back from several threads of its own
    # process (so that its client's threads take no time from the quiet tenant's client)
    targets = [f"{slug}={channel_id}" for slug, channel_id in channels]
    noisy_client = subprocess.Popen(
        [sys.executable, "-c", NOISY_CLIENT, web.base, noisy_key, str(LOADED_SECONDS + 1),
         str(NOISY_THREADS), str(RATE_LIMIT_PER_MINUTE / 60), *targets],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    time.sleep(0.5)  # its sends are in flight
    loaded = []
    loaded_until = time.monotonic() + LOADED_SECONDS
    while time.monotonic() < loaded_until:
        loaded.append(quiet_request())
    silent_receiver.close()  # the sends still waiting end at once
    noisy_answers, _ = noisy_client.communicate(timeout=30)
    noisy_answers = json.loads(noisy_answers)

    # then: the quiet tenant kept its speed
    assert max(loaded) <= SLOWEST_SECONDS, (max(loaded), sorted(loaded)[-5:])
    assert p95(loaded) <= P95_FACTOR * p95(idle), (p95(loaded), p95(idle))
    # and the noisy tenant was answered, not queued: its test sends beyond the bounds refused
    # at once (429: its store's test send in flight; 503: the process's calls at their bound)
    assert "429" in noisy_answers and set(noisy_answers) <= {"422", "429", "503"}, noisy_answers
