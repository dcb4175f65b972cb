"""Settings of health, beat and queues, imported by base.py; read from the environment.

Probes: /healthz (liveness), /readyz (database, migrations, cache, broker), /status (readiness
plus the heartbeats of beat and of each queue's workers, and the webhook backlog, for
alerting). Beat holds a lock while it schedules (config/beat.py). Webhook sends and maintenance
run on separate queues.
"""

from kombu import Exchange, Queue

from config.settings.env import env

# Every probe answers within this, whatever a dependency does (a check still running by then
# is reported as `timeout`).
HEALTH_CHECK_TIMEOUT_SECONDS = env.seconds("HEALTH_CHECK_TIMEOUT_SECONDS", 2)
# A check's result serves every probe of this many seconds after its run started (per process,
# /readyz and /status alike): a flood of probes costs one run per interval. 0: every probe runs
# every check.
HEALTH_CHECK_RESULT_SECONDS = env.seconds("HEALTH_CHECK_RESULT_SECONDS", 1)
# Requests per minute to /readyz, and separately to /status, per client address (429 with
# Retry-After beyond). An orchestrator probing every second from one address uses half of it.
HEALTH_RATE_LIMIT_PER_MINUTE = env.count("HEALTH_RATE_LIMIT_PER_MINUTE", default=120, minimum=1)
# Beat ticks, renews its lock and records its heartbeat at least this often; /status reports
# beat as stale after two intervals of silence.
BEAT_HEARTBEAT_SECONDS = env.seconds("BEAT_HEARTBEAT_SECONDS", 15)
# A beat that dies without releasing the lock (kill -9, lost host) blocks a standby beat this
# long: long enough to survive a missed renewal, short enough that schedules resume quickly.
BEAT_LOCK_SECONDS = env.seconds("BEAT_LOCK_SECONDS", 4 * BEAT_HEARTBEAT_SECONDS)
# /status fails when a pending delivery has been due for longer than this (workers stopped,
# too few of them, or the webhooks queue not consumed).
HEALTH_WEBHOOK_BACKLOG_MAX_AGE_SECONDS = env.seconds("HEALTH_WEBHOOK_BACKLOG_MAX_AGE_SECONDS", 300)

CELERY_BEAT_SCHEDULER = "config.beat:LockedScheduler"

# Deliveries (and the sweeper that re-queues them) on their own queue, so a long prune never
# delays a send; everything else, including any task not routed here, on `maintenance`.
WEBHOOKS_QUEUE = "webhooks"
MAINTENANCE_QUEUE = "maintenance"
# A worker started without -Q consumes every queue listed here (`make run` and the tests).
# Each with its own exchange and routing key: a bare Queue(name) is bound with the default
# queue's exchange and key (the worker banner showed `webhooks ... key=maintenance`).
CELERY_TASK_QUEUES = tuple(
    Queue(name, Exchange(name, type="direct"), routing_key=name)
    for name in (WEBHOOKS_QUEUE, MAINTENANCE_QUEUE)
)
CELERY_TASK_DEFAULT_QUEUE = MAINTENANCE_QUEUE
CELERY_TASK_ROUTES = {"webhooks.*": {"queue": WEBHOOKS_QUEUE}}

# Beat sends a heartbeat task to each queue this often; the worker that takes it records the
# time (config/worker_heartbeat.py). /status reports a queue's workers stale after two intervals
# plus one beat tick of silence.
WORKER_HEARTBEAT_SECONDS = env.seconds("WORKER_HEARTBEAT_SECONDS", 30)
WORKER_HEARTBEAT_QUEUES = (WEBHOOKS_QUEUE, MAINTENANCE_QUEUE)
# A heartbeat not taken within this many intervals expires and beat sends another: a queue
# nobody consumes holds at most one per period (about 144 a day at 30 s), not one per interval.
WORKER_HEARTBEAT_EXPIRES_INTERVALS = 20


def worker_heartbeat_schedule(interval: float) -> dict:
    """Beat's entries: one heartbeat per queue, sent to that queue whatever the routes say."""
    return {
        f"worker-heartbeat-{queue}": {
            "task": "health.worker_heartbeat",
            "schedule": interval,
            "args": (queue,),
            "options": {"queue": queue, "expires": WORKER_HEARTBEAT_EXPIRES_INTERVALS * interval},
        }
        for queue in WORKER_HEARTBEAT_QUEUES
    }


HEALTH_BEAT_SCHEDULE = worker_heartbeat_schedule(WORKER_HEARTBEAT_SECONDS)
# Not an app's tasks.py (autodiscovery does not find it): the workers import it at start.
CELERY_IMPORTS = ("config.worker_heartbeat",)
