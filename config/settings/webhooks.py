"""Settings of the webhooks area (docs/configuration.md). Durations are in seconds and may be
fractions, so the suite and the benchmark can compress schedules, leases and sweeps."""

from datetime import timedelta

from config.settings.env import env

WEBHOOKS_RETRY_SCHEDULE_SECONDS = env.seconds_list(
    "WEBHOOKS_RETRY_SCHEDULE_SECONDS", "5,300,1800,7200,18000,36000,36000"
)
WEBHOOKS_TIMEOUT_SECONDS = env.seconds("WEBHOOKS_TIMEOUT_SECONDS", 10)
WEBHOOKS_DNS_TIMEOUT_SECONDS = env.seconds("WEBHOOKS_DNS_TIMEOUT_SECONDS", 2)
# How long an answer that passed the address check serves its host's next attempts without a
# lookup (webhooks/dispatch/connection.py). 0: every attempt looks its host up.
WEBHOOKS_CHECKED_ANSWER_SECONDS = env.seconds("WEBHOOKS_CHECKED_ANSWER_SECONDS", 60)
# The certificate authorities receivers' certificates are checked against, a PEM file; empty:
# the bundled public ones (certifi).
WEBHOOKS_CA_BUNDLE = env.str("WEBHOOKS_CA_BUNDLE", default="")
# A channel's test send, which its request waits for (webhooks/dispatch/outbound.py bounds how
# many).
WEBHOOKS_TEST_SEND_TIMEOUT_SECONDS = env.seconds("WEBHOOKS_TEST_SEND_TIMEOUT_SECONDS", 5)
# Outbound calls (test sends, DNS checks) a web process waits for at once: well below its
# threads (WEB_THREADS), so that the other tenants' requests always find one.
WEBHOOKS_OUTBOUND_CALLS_PER_PROCESS = env.count(
    "WEBHOOKS_OUTBOUND_CALLS_PER_PROCESS", default=2, minimum=1
)
# Hard time limit of the sending tasks (prefork only: config/celery.py).
WEBHOOKS_TIME_LIMIT_SECONDS = env.seconds("WEBHOOKS_TIME_LIMIT_SECONDS", 45)
# The pool counts the limit from when it learns the task started and looks once a second
# before killing, and leases are in the workers' clocks: hence a margin.
WEBHOOKS_LEASE_MARGIN_SECONDS = env.seconds("WEBHOOKS_LEASE_MARGIN_SECONDS", 10)
# A claimed delivery and a send slot (webhooks/dispatch/attempts.py) belong to their worker at most
# this long: more than the time limit plus the margin (webhooks.E001), so no live worker still sends
# when another takes them over. Within it, a lease lasts three heartbeats and the worker renews it
# every WEBHOOKS_HEARTBEAT_SECONDS while it lives (webhooks/dispatch/leases.py): those of a worker
# that died come back within seconds.
WEBHOOKS_LEASE_SECONDS = env.seconds("WEBHOOKS_LEASE_SECONDS", 60)
WEBHOOKS_HEARTBEAT_SECONDS = env.seconds("WEBHOOKS_HEARTBEAT_SECONDS", 1)
# A channel's drain (one task sending its due deliveries in turn) claims no more after
# this long and queues its successor, so one backlog does not hold a worker process for long.
WEBHOOKS_DRAIN_SECONDS = env.seconds("WEBHOOKS_DRAIN_SECONDS", 10)
# In-flight sends per channel, account and to failing channels, each below the
# worker process count (docs/decisions/webhooks.md "Fairness").
# WEBHOOKS_DESTINATION_CONCURRENCY is its name before channels, read until the alias's sunset.
WEBHOOKS_CHANNEL_CONCURRENCY = env.count(
    "WEBHOOKS_CHANNEL_CONCURRENCY",
    default=env.count("WEBHOOKS_DESTINATION_CONCURRENCY", default=2, minimum=1),
    minimum=1,
)
WEBHOOKS_ACCOUNT_CONCURRENCY = env.count("WEBHOOKS_ACCOUNT_CONCURRENCY", default=3, minimum=1)
WEBHOOKS_FAILING_CONCURRENCY = env.count("WEBHOOKS_FAILING_CONCURRENCY", default=2, minimum=1)
WEBHOOKS_REPLAY_LIMIT = env.count("WEBHOOKS_REPLAY_LIMIT", default=100, minimum=1)
WEBHOOKS_REPLAY_WINDOW_SECONDS = env.seconds("WEBHOOKS_REPLAY_WINDOW_SECONDS", 3600)
# Channels per store: each one multiplies every event of the store into a delivery row written
# in the event's transaction, so the cap bounds one event's fan-out.
WEBHOOKS_STORE_CHANNELS_MAX = env.count("WEBHOOKS_STORE_CHANNELS_MAX", default=20, minimum=1)
# A store's pending deliveries at most: an event whose deliveries would pass it gets none
# (recover sends it later), and recover and replay answer 429 meanwhile.
WEBHOOKS_STORE_PENDING_MAX = env.count("WEBHOOKS_STORE_PENDING_MAX", default=50000, minimum=1)
# Recover per store in any sliding window: calls, and deliveries queued
# (webhooks/channels/recovery.py).
WEBHOOKS_RECOVER_CALLS_LIMIT = env.count("WEBHOOKS_RECOVER_CALLS_LIMIT", default=20, minimum=1)
WEBHOOKS_RECOVER_QUEUED_LIMIT = env.count("WEBHOOKS_RECOVER_QUEUED_LIMIT", default=20000, minimum=1)
WEBHOOKS_RECOVER_WINDOW_SECONDS = env.seconds("WEBHOOKS_RECOVER_WINDOW_SECONDS", 3600)
# One recover call queues at most this many, in transactions of a batch each.
WEBHOOKS_RECOVER_MAX = env.count("WEBHOOKS_RECOVER_MAX", default=5000, minimum=1)
WEBHOOKS_RECOVER_BATCH = env.count("WEBHOOKS_RECOVER_BATCH", default=500, minimum=1)
# How often beat runs the sweeper, and how long a due delivery's queued message is trusted
# before the sweeper enqueues another one (a lost message, a Redis outage, a killed worker).
WEBHOOKS_SWEEP_INTERVAL_SECONDS = env.seconds("WEBHOOKS_SWEEP_INTERVAL_SECONDS", 5)
WEBHOOKS_REQUEUE_AFTER_SECONDS = env.seconds("WEBHOOKS_REQUEUE_AFTER_SECONDS", 60)
WEBHOOKS_SWEEP_BATCH_SIZE = env.count("WEBHOOKS_SWEEP_BATCH_SIZE", default=500, minimum=1)
WEBHOOKS_SWEEP_MAX_BATCHES = env.count("WEBHOOKS_SWEEP_MAX_BATCHES", default=20, minimum=1)
# After a failed publish a process queues no sending task for this long, so that during a
# broker outage business requests do not each wait out a connection timeout (the sweeper
# queues what was left). 0: no pause.
WEBHOOKS_BROKER_OUTAGE_PAUSE_SECONDS = env.seconds("WEBHOOKS_BROKER_OUTAGE_PAUSE_SECONDS", 5)
# Retries due sooner than this are queued with a countdown; later ones are left to the
# sweeper (long broker ETAs are redelivered by Redis' visibility timeout anyway).
WEBHOOKS_COUNTDOWN_MAX_SECONDS = env.seconds("WEBHOOKS_COUNTDOWN_MAX_SECONDS", 60)
# A channel whose every attempt failed for this long is disabled.
WEBHOOKS_DISABLE_AFTER_FAILING = timedelta(
    seconds=env.seconds("WEBHOOKS_DISABLE_AFTER_FAILING_SECONDS", 5 * 24 * 3600)
)
# After a rotation the previous secret still signs (a second v1 signature) this long.
WEBHOOKS_PREVIOUS_SECRET_TTL = timedelta(hours=24)
WEBHOOKS_RESPONSE_BODY_LIMIT = 1024
WEBHOOKS_USER_AGENT = "Storefront-Webhooks/1.0"

# Deliveries are dropped with their events' day (events.partitions), so the sweeper is the
# area's only periodic task.
WEBHOOKS_BEAT_SCHEDULE: dict = {
    "webhooks-deliveries-sweep": {
        "task": "webhooks.deliveries_sweep",
        "schedule": WEBHOOKS_SWEEP_INTERVAL_SECONDS,
    },
}
