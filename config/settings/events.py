"""Settings of the events area, imported by base.py; read from the environment."""

from celery.schedules import crontab

from config.settings.env import env

# The journal keeps events this long (spec "Limits": event retention 30 days).
EVENTS_RETENTION_DAYS = 30
# Days ahead of today whose partitions upkeep keeps ready (docs/decisions/events.md
# "Partitioned by day"): a week of hourly retries before a day could lack its partition.
EVENTS_PARTITIONS_AHEAD = 7
# Rows deleted per prune transaction (the legacy partition's expired rows): small enough
# that no lock is held for long.
EVENTS_PRUNE_BATCH_SIZE = env.count("EVENTS_PRUNE_BATCH_SIZE", default=1000, minimum=1)

EVENTS_BEAT_SCHEDULE: dict = {
    # Creates the days ahead and drops the days past retention (events/partitions.py).
    "events-partitions": {
        "task": "events.partitions",
        "schedule": crontab(minute=23),
    },
}
