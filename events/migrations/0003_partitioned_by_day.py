"""events_event becomes partitioned by UTC day on occurred_at; the rows it has stay in one
partition, events_event_legacy (docs/decisions/events.md "Partitioned by day"). Not atomic:
the scans run while writers go on, and the lock is held only for the swap
(core/database/partitions.py). Rolled back by copying the rows into a plain table again."""

from django.conf import settings
from django.db import migrations

from core.database.partitions import table_partition_by_day, table_unpartition


def partition(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        table_partition_by_day(
            cursor,
            table="events_event",
            key="occurred_at",
            days_ahead=settings.EVENTS_PARTITIONS_AHEAD,
        )


def unpartition(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        table_unpartition(cursor, table="events_event")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("events", "0002_event_positions")]

    operations = [migrations.RunPython(partition, unpartition, elidable=False)]
