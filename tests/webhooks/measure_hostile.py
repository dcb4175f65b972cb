"""Measurements, not tests (the file's name keeps it out of the suite's collection), of
docs/benchmarks/hardening.md "A receiver's answer is an attempt on the schedule", which gives
their commands and figures:

- how many times one event is sent in 25 s to a receiver answering `200 ok\\x00ok`, with a real
  worker under the production schedule, sweep, lease and time limits;
- the claim and outcome of a delivery with the claim statement of the checkout at $BEFORE
  (its webhooks/dispatch/leases.py), of this one, and of this one without its `next_attempt_at`,
  one after another per delivery so that the host's load weighs on each alike.
"""

import os
import statistics
import time
import uuid
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from core.database.connections import PreparedStatement
from tests.webhooks.helpers import Reply, channel_for, record_order_completed
from webhooks.dispatch import leases
from webhooks.models import WebhookDelivery, WebhookDeliveryAttempt, due_sql

pytestmark = pytest.mark.django_db(transaction=True)

PRODUCTION_SCHEDULE = "5,300,1800,7200,18000,36000,36000"
PRODUCTION_TIMINGS = {
    "WEBHOOKS_RETRY_SCHEDULE_SECONDS": PRODUCTION_SCHEDULE,
    "WEBHOOKS_SWEEP_INTERVAL_SECONDS": "5",
    "WEBHOOKS_REQUEUE_AFTER_SECONDS": "60",
    "WEBHOOKS_TIMEOUT_SECONDS": "10",
    "WEBHOOKS_TIME_LIMIT_SECONDS": "45",
    "WEBHOOKS_LEASE_MARGIN_SECONDS": "10",
    "WEBHOOKS_LEASE_SECONDS": "60",
    "WEBHOOKS_DRAIN_SECONDS": "10",
}
WATCHED_SECONDS = 25
CYCLES = 500


@pytest.mark.worker
def test_sends_of_one_event_answered_with_a_nul(start_worker, store, receiver):
    start_worker(PRODUCTION_TIMINGS)
    channel_for(store, receiver.url)
    receiver.respond = lambda request: Reply(200, b"ok\x00ok")
    record_order_completed(store)
    time.sleep(WATCHED_SECONDS)
    delivery = WebhookDelivery.objects.get()
    errors = list(delivery.attempt_records.values_list("error", flat=True))
    print(
        f"\nsends in {WATCHED_SECONDS} s: {len(receiver.received())}; delivery {delivery.status}, "
        f"{delivery.attempts} attempts counted, attempt rows: {errors}"
    )


def _claim_statement(name: str, sql: str) -> PreparedStatement:
    columns = ", ".join(
        f'{alias}."{field.column}"'
        for alias, model in leases.CLAIM_ROW_MODELS
        for field in model._meta.concrete_fields
    )
    return PreparedStatement(
        name,
        sql.format(
            match="due.channel_id = %(channel_id)s",
            due=due_sql(delivery="due", now="%(now)s"),
            tries_left="delivery.attempts < %(attempts_most)s",
            columns=columns,
        ),
    )


def _cycle(statement: PreparedStatement, channel_id, extra: dict) -> None:
    """One claim of the channel's oldest due delivery, and its outcome (a 200)."""
    now = timezone.now()
    params = {"lease_until": now, "token": uuid.uuid4(), "now": now, **extra}
    with connection.cursor() as cursor:
        statement.execute(cursor, {**params, "channel_id": channel_id})
        delivery = leases._claimed_from_row(cursor.fetchone())
    attempt = WebhookDeliveryAttempt(
        delivery=delivery,
        delivery_event_occurred_at=delivery.event_occurred_at,
        number=delivery.attempts,
        origin="http://127.0.0.1",
        started_at=now,
        finished_at=now,
        duration_ms=1,
        response_status=200,
        response_body="ok",
    )
    outcome = {
        "status": "succeeded",
        "response_status": 200,
        "response_body": "ok",
        "next_attempt_at": None,
        "enqueued_at": None,
        "lease_until": None,
        "lease_token": None,
        "updated_at": now,
    }
    assert leases.outcome_record(delivery=delivery, attempt=attempt, outcome=outcome)


def test_claim_and_outcome_cost(store, receiver):
    before = Path(os.environ["BEFORE"]) / "webhooks" / "leases.py"
    source = before.read_text()
    start = source.index('CLAIM_SQL = """') + len('CLAIM_SQL = """')
    # the claim's SET without its next_attempt_at (from that line to the CASE's END)
    set_next = leases.CLAIM_SQL.index("        next_attempt_at = CASE")
    set_next_end = leases.CLAIM_SQL.index("END,\n", set_next) + len("END,\n")
    without_next = leases.CLAIM_SQL[:set_next] + leases.CLAIM_SQL[set_next_end:]
    assert without_next != leases.CLAIM_SQL
    schedule = PRODUCTION_SCHEDULE.split(",")
    extra = {"waits": "{" + PRODUCTION_SCHEDULE + "}", "attempts_most": len(schedule) + 1}
    variants = {
        "before": (
            _claim_statement("measure_claim_before", source[start : source.index('"""', start)]),
            {},
        ),
        "after": (_claim_statement("measure_claim_after", leases.CLAIM_SQL), extra),
        "after without next_attempt_at": (
            _claim_statement("measure_claim_without_next", without_next),
            extra,
        ),
    }
    channel = channel_for(store, receiver.url)
    for order in range(1, len(variants) * CYCLES + 1):
        record_order_completed(store, order_id=order)
    timings = {label: [] for label in variants}
    labels = list(variants)
    for cycle in range(CYCLES):
        for label in labels[cycle % 3 :] + labels[: cycle % 3]:
            statement, params = variants[label]
            started = time.perf_counter()
            _cycle(statement, channel.pk, params)
            timings[label].append((time.perf_counter() - started) * 1e6)
    print()
    for label, values in timings.items():
        quartiles = statistics.quantiles(values, n=4)
        print(
            f"{label}: median {statistics.median(values):.0f} us per claim and outcome "
            f"(quartiles {quartiles[0]:.0f}, {quartiles[2]:.0f})"
        )
