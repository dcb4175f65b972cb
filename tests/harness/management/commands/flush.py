"""Django's flush, retried when PostgreSQL chooses it as a deadlock's victim.

Between the tests of a module the suite's Celery workers keep running, beat included (the
sweeper, the heartbeat, recovery): their transactions lock the tables they read one by one,
while the TRUNCATE of a transactional test's teardown locks every table in its own order. When
the two cross, PostgreSQL aborts one of them; if it is the TRUNCATE, the rows of the finished
test would leak into the next one. The worker's transaction is short, so trying again wins.
"""

import time

from django.core.management.base import CommandError
from django.core.management.commands import flush

DEADLOCK_DETECTED = "40P01"  # PostgreSQL's SQLSTATE
ATTEMPTS = 5


def deadlock_victim(error: CommandError) -> bool:
    cause = error.__cause__  # django.db.OperationalError, wrapping psycopg's error
    database_error = getattr(cause, "__cause__", None)
    return getattr(database_error, "sqlstate", None) == DEADLOCK_DETECTED


class Command(flush.Command):
    def handle(self, **options):
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return super().handle(**options)
            except CommandError as error:
                if attempt == ATTEMPTS or not deadlock_victim(error):
                    raise
                time.sleep(0.1 * attempt)
        return None
