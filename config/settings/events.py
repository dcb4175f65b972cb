"""Settings of the events area, imported by base.py; read from the environment."""

import os

from celery.schedules import crontab

# The journal keeps events this long (spec "Limits": event retention 30 days).
EVENTS_RETENTION_DAYS = 30
# Rows deleted per prune transaction: small enough that no lock is held for long.
EVENTS_PRUNE_BATCH_SIZE = int(os.environ.get("EVENTS_PRUNE_BATCH_SIZE", "1000"))

EVENTS_BEAT_SCHEDULE: dict = {
    "events-prune": {
        "task": "events.prune",
        "schedule": crontab(minute=23),
    },
}
