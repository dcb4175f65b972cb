"""Deliveries and their attempts become partitioned by their event's UTC day, alongside
events_event (events 0003); their rows stay in a legacy partition each
(docs/decisions/events.md "Partitioned by day"). The delivery totals' triggers move to the
partitioned table in the swap's transaction. Not atomic."""

from django.conf import settings
from django.db import migrations

from core.database.partitions import table_partition_by_day, table_unpartition
from webhooks.models import DELIVERY_TOTALS


def partition(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        table_partition_by_day(
            cursor,
            table="webhooks_webhookdelivery",
            key="event_occurred_at",
            days_ahead=settings.EVENTS_PARTITIONS_AHEAD,
            before_swap=tuple(DELIVERY_TOTALS.drop_sql()),
            after_swap=tuple(DELIVERY_TOTALS.create_sql()),
        )
        table_partition_by_day(
            cursor,
            table="webhooks_webhookdeliveryattempt",
            key="delivery_event_occurred_at",
            days_ahead=settings.EVENTS_PARTITIONS_AHEAD,
        )


def unpartition(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        table_unpartition(cursor, table="webhooks_webhookdeliveryattempt")
        table_unpartition(
            cursor,
            table="webhooks_webhookdelivery",
            before_swap=tuple(DELIVERY_TOTALS.drop_sql()),
            after_swap=tuple(DELIVERY_TOTALS.create_sql()),
        )


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("events", "0003_partitioned_by_day"),
        ("webhooks", "0012_partition_keys"),
    ]

    operations = [migrations.RunPython(partition, unpartition, elidable=False)]
