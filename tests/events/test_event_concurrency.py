import random
import threading
import time

import pytest
from django.db import connection, transaction
from rest_framework.test import APIClient

from events.services import record

pytestmark = pytest.mark.django_db(transaction=True)

WRITERS = 6
TRANSACTIONS_PER_WRITER = 12


def test_a_poller_sees_every_event_exactly_once_under_concurrent_writers(api_key, store):
    # given writers whose transactions interleave, hold for random times and commit out of
    # the order in which their events were inserted
    recorded: list[str] = []
    recorded_lock = threading.Lock()
    errors: list[BaseException] = []
    writers_done = threading.Event()

    def writer(number: int):
        rng = random.Random(number)
        try:
            for n in range(TRANSACTIONS_PER_WRITER):
                with transaction.atomic():
                    ids = []
                    for k in range(rng.randint(1, 3)):
                        ids.append(
                            record(
                                store=store,
                                type="coupon.updated",
                                subject=("coupon", f"{number}-{n}-{k}"),
                            ).id
                        )
                        time.sleep(rng.uniform(0, 0.02))
                    time.sleep(rng.uniform(0, 0.08))
                with recorded_lock:
                    recorded.extend(ids)
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    seen: list[str] = []

    def poller():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key}")
        cursor = None
        try:
            while True:
                finished = writers_done.is_set()
                params = {"limit": 7}
                if cursor:
                    params["cursor"] = cursor
                response = client.get("/api/v2/events", params)
                assert response.status_code == 200, response.content
                body = response.json()
                seen.extend(e["id"] for e in body["data"])
                cursor = body["meta"]["next_cursor"]
                if finished and not body["meta"]["has_more"]:
                    return
                time.sleep(0.005)
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    # when
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    poll_thread = threading.Thread(target=poller)
    poll_thread.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    writers_done.set()
    poll_thread.join(60)

    # then
    assert not errors, errors
    assert len(recorded) >= WRITERS * TRANSACTIONS_PER_WRITER
    assert len(seen) == len(set(seen)), "an event was served twice"
    assert sorted(seen) == sorted(recorded), "an event was skipped"
