"""Settings of the events area, imported by base.py; read from the environment."""

from celery.schedules import crontab

from config.settings.env import env

# The journal keeps events this long (spec "Limits": event retention 30 days).
EVENTS_RETENTION_DAYS = 30
# Rows deleted per prune transaction: small enough that no lock is held for long.
EVENTS_PRUNE_BATCH_SIZE = env.count("EVENTS_PRUNE_BATCH_SIZE", default=1000, minimum=1)

EVENTS_BEAT_SCHEDULE: dict = {
    "events-prune": {
        "task": "events.prune",
        "schedule": crontab(minute=23),
    },
}
