"""Django's flush, retried when PostgreSQL chooses it as a deadlock's victim, and followed by
the removal of the day partitions the finished test made.

Between the tests of a module the suite's Celery workers keep running, beat included (the
sweeper, the heartbeat, recovery): their transactions lock the tables they read one by one,
while the TRUNCATE of a transactional test's teardown locks every table in its own order. When
the two cross, PostgreSQL aborts one of them; if it is the TRUNCATE, the rows of the finished
test would leak into the next one. The worker's transaction is short, so trying again wins.
"""

import time
from datetime import timedelta

from django.conf import settings
from django.core.management.base import CommandError
from django.core.management.commands import flush
from django.db import OperationalError, connections
from django.utils import timezone

from core.database.partitions import partitions_list
from events.partitions import ALONGSIDE, EVENTS_TABLE, partitions_ensure

DEADLOCK_DETECTED = "40P01"  # PostgreSQL's SQLSTATE
ATTEMPTS = 5


def deadlock_victim(error: Exception) -> bool:
    """Whether PostgreSQL's error under `error` (flush's CommandError wraps Django's, which
    wraps psycopg's) is a deadlock."""
    while error is not None:
        if getattr(error, "sqlstate", None) == DEADLOCK_DETECTED:
            return True
        error = error.__cause__
    return False


def day_partitions_trim(database: str) -> None:
    """Drops the journal's day partitions a test made outside today and the days ahead (an
    old event's day, the days of an upkeep test): the next test starts with the partitions a
    fresh database has (today and the days ahead, made again if a test left them in a legacy
    partition), and no flush or query pays for a finished test's days."""
    today = timezone.now().date()
    kept = {today + timedelta(days=n) for n in range(settings.EVENTS_PARTITIONS_AHEAD + 1)}
    dropped = False
    with connections[database].cursor() as cursor:
        # attempts, deliveries, then events (no foreign keys between them, but that order
        # is retention's)
        for table in [*(entry.table for entry in reversed(ALONGSIDE)), EVENTS_TABLE]:
            for partition in partitions_list(cursor, table):
                if partition.day not in kept:
                    cursor.execute(f"DROP TABLE IF EXISTS {partition.name}")
                    dropped = True
    if dropped:  # a migration test leaves today and tomorrow in a legacy partition
        partitions_ensure(min(kept), max(kept), using=database)


class Command(flush.Command):
    def handle(self, **options):
        for attempt in range(1, ATTEMPTS + 1):
            try:
                flushed = super().handle(**options)
                day_partitions_trim(options["database"])
                return flushed
            except (CommandError, OperationalError) as error:
                if attempt == ATTEMPTS or not deadlock_victim(error):
                    raise
                time.sleep(0.1 * attempt)
        return None
