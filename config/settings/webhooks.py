"""Settings of the webhooks area, imported by base.py; read from the environment.

Every duration is in seconds and may be a fraction, so the test suite and the benchmark can
compress the retry schedule, leases and sweeps (DESIGN.md "Webhooks").
"""

import os
from datetime import timedelta


def _seconds_list(name: str, default: str) -> tuple[float, ...]:
    return tuple(float(part) for part in os.environ.get(name, default).split(",") if part.strip())


def _seconds(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


# Waits before attempts 2..8 (DESIGN.md: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h); after the
# last one a delivery that never got a 2xx is `failed`.
WEBHOOKS_RETRY_SCHEDULE_SECONDS = _seconds_list(
    "WEBHOOKS_RETRY_SCHEDULE_SECONDS", "5,300,1800,7200,18000,36000,36000"
)
# Connect and read timeout of one attempt.
WEBHOOKS_TIMEOUT_SECONDS = _seconds("WEBHOOKS_TIMEOUT_SECONDS", 10)
# How long saving a destination waits for its host to resolve (inside a synchronous web
# worker; the resolver itself may take 10 s or more): then 422 "could not resolve host".
WEBHOOKS_DNS_TIMEOUT_SECONDS = _seconds("WEBHOOKS_DNS_TIMEOUT_SECONDS", 2)
# A claimed delivery belongs to its worker this long; longer than any attempt can take
# (connect + read timeouts plus margin), so two workers never send the same attempt.
WEBHOOKS_LEASE_SECONDS = _seconds("WEBHOOKS_LEASE_SECONDS", 60)
# A destination's drain (one task sending its due deliveries in turn) claims no more after
# this long and queues its successor, so one backlog does not hold a worker process for long.
WEBHOOKS_DRAIN_SECONDS = _seconds("WEBHOOKS_DRAIN_SECONDS", 10)
# In-flight sends per destination (drains and single sends alike), below the worker process
# count: a receiver that hangs or fails holds at most this many processes; the rest of its
# deliveries wait in the database, not in a worker (docs/decisions/webhooks.md "Fairness").
WEBHOOKS_DESTINATION_CONCURRENCY = int(os.environ.get("WEBHOOKS_DESTINATION_CONCURRENCY", "2"))
# Replays per store per sliding window (API and admin alike); more is 429 with Retry-After.
WEBHOOKS_REPLAY_LIMIT = int(os.environ.get("WEBHOOKS_REPLAY_LIMIT", "100"))
WEBHOOKS_REPLAY_WINDOW_SECONDS = _seconds("WEBHOOKS_REPLAY_WINDOW_SECONDS", 3600)
# How often beat runs the sweeper, and how long a due delivery's queued message is trusted
# before the sweeper enqueues another one (a lost message, a Redis outage, a killed worker).
WEBHOOKS_SWEEP_INTERVAL_SECONDS = _seconds("WEBHOOKS_SWEEP_INTERVAL_SECONDS", 10)
WEBHOOKS_REQUEUE_AFTER_SECONDS = _seconds("WEBHOOKS_REQUEUE_AFTER_SECONDS", 60)
WEBHOOKS_SWEEP_BATCH_SIZE = int(os.environ.get("WEBHOOKS_SWEEP_BATCH_SIZE", "500"))
WEBHOOKS_SWEEP_MAX_BATCHES = int(os.environ.get("WEBHOOKS_SWEEP_MAX_BATCHES", "20"))
# Retries due sooner than this are queued with a countdown; later ones are left to the
# sweeper (long broker ETAs are redelivered by Redis' visibility timeout anyway).
WEBHOOKS_COUNTDOWN_MAX_SECONDS = _seconds("WEBHOOKS_COUNTDOWN_MAX_SECONDS", 60)
# A destination whose every attempt failed for this long is disabled.
WEBHOOKS_DISABLE_AFTER_FAILING = timedelta(
    seconds=_seconds("WEBHOOKS_DISABLE_AFTER_FAILING_SECONDS", 5 * 24 * 3600)
)
# After a rotation the previous secret still signs (a second v1 signature) this long.
WEBHOOKS_PREVIOUS_SECRET_TTL = timedelta(hours=24)
WEBHOOKS_RESPONSE_BODY_LIMIT = 1024
WEBHOOKS_USER_AGENT = "Storefront-Webhooks/1.0"

# Deliveries are deleted with their events (on_delete=CASCADE, events.prune), so the sweeper
# is the area's only periodic task.
WEBHOOKS_BEAT_SCHEDULE: dict = {
    "webhooks-deliveries-sweep": {
        "task": "webhooks.deliveries_sweep",
        "schedule": WEBHOOKS_SWEEP_INTERVAL_SECONDS,
    },
}
