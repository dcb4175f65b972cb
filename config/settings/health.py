"""Settings of health, beat and queues (docs/configuration.md describes each variable)."""

from kombu import Exchange, Queue

from config.settings.env import env

HEALTH_CHECK_TIMEOUT_SECONDS = env.seconds("HEALTH_CHECK_TIMEOUT_SECONDS", 2)
HEALTH_CHECK_RESULT_SECONDS = env.seconds("HEALTH_CHECK_RESULT_SECONDS", 1)
# An orchestrator probing every second from one address uses half of it.
HEALTH_RATE_LIMIT_PER_MINUTE = env.count("HEALTH_RATE_LIMIT_PER_MINUTE", default=120, minimum=1)
BEAT_HEARTBEAT_SECONDS = env.seconds("BEAT_HEARTBEAT_SECONDS", 15)
# Long enough to survive a missed renewal, short enough that schedules resume quickly.
BEAT_LOCK_SECONDS = env.seconds("BEAT_LOCK_SECONDS", 4 * BEAT_HEARTBEAT_SECONDS)
HEALTH_WEBHOOK_BACKLOG_MAX_AGE_SECONDS = env.seconds("HEALTH_WEBHOOK_BACKLOG_MAX_AGE_SECONDS", 300)

CELERY_BEAT_SCHEDULER = "core.operations.beat:LockedScheduler"

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
CELERY_IMPORTS = ("core.operations.worker_heartbeat",)
