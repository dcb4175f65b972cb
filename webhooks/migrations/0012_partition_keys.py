"""Deliveries and attempts get their event's day (the key they are partitioned by in 0013) and
lose their foreign keys to the partitioned tables (docs/decisions/events.md "Partitioned by
day"). Not atomic: existing rows are filled in short batches, the NOT NULL comes from a
validated check (no scan under the lock), and the attempts' unique key is rebuilt
concurrently."""

from django.db import migrations, models, transaction

BATCH = 5000


def keys_fill(apps, schema_editor):
    statements = (
        # deliveries from their events, then attempts from their deliveries
        """UPDATE webhooks_webhookdelivery AS delivery SET event_occurred_at = event.occurred_at
        FROM events_event AS event WHERE event.id = delivery.event_id AND delivery.id IN (
            SELECT id FROM webhooks_webhookdelivery WHERE event_occurred_at IS NULL LIMIT %s)""",
        """UPDATE webhooks_webhookdeliveryattempt AS attempt
        SET delivery_event_occurred_at = delivery.event_occurred_at
        FROM webhooks_webhookdelivery AS delivery WHERE delivery.id = attempt.delivery_id
        AND attempt.id IN (SELECT id FROM webhooks_webhookdeliveryattempt
            WHERE delivery_event_occurred_at IS NULL LIMIT %s)""",
    )
    for statement in statements:
        while True:
            with transaction.atomic(), schema_editor.connection.cursor() as cursor:
                cursor.execute(statement, [BATCH])
                if cursor.rowcount == 0:
                    break
    # A delivery whose event is gone, or an attempt whose delivery is (a row the foreign keys
    # would have deleted with it): nothing can show it, and it has no day.
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM webhooks_webhookdeliveryattempt WHERE delivery_event_occurred_at IS NULL"
        )
        cursor.execute("DELETE FROM webhooks_webhookdelivery WHERE event_occurred_at IS NULL")


def not_null(table: str, column: str) -> list[str]:
    check = f"{table}_{column}_set"[:63]
    return [
        f"ALTER TABLE {table} ADD CONSTRAINT {check} CHECK ({column} IS NOT NULL) NOT VALID",
        f"ALTER TABLE {table} VALIDATE CONSTRAINT {check}",
        f"ALTER TABLE {table} ALTER COLUMN {column} SET NOT NULL",  # trusts the check: no scan
        f"ALTER TABLE {table} DROP CONSTRAINT {check}",
    ]


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("events", "0002_event_positions"),
        ("webhooks", "0011_channels"),
    ]
    # The events table is converted once nothing references it (events 0003).
    run_before = [("events", "0003_partitioned_by_day")]

    operations = [
        migrations.AlterField(
            model_name="webhookdelivery",
            name="event",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=models.deletion.CASCADE,
                related_name="webhook_deliveries",
                to="events.event",
            ),
        ),
        migrations.AlterField(
            model_name="webhookdeliveryattempt",
            name="delivery",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=models.deletion.CASCADE,
                related_name="attempt_records",
                to="webhooks.webhookdelivery",
            ),
        ),
        migrations.AddField(
            model_name="webhookdelivery",
            name="event_occurred_at",
            field=models.DateTimeField(null=True),
        ),
        migrations.AddField(
            model_name="webhookdeliveryattempt",
            name="delivery_event_occurred_at",
            field=models.DateTimeField(null=True),
        ),
        migrations.RunPython(keys_fill, migrations.RunPython.noop, elidable=False),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    not_null(table, column),
                    f"ALTER TABLE {table} ALTER COLUMN {column} DROP NOT NULL",
                )
                for table, column in (
                    ("webhooks_webhookdelivery", "event_occurred_at"),
                    ("webhooks_webhookdeliveryattempt", "delivery_event_occurred_at"),
                )
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="webhookdelivery",
                    name="event_occurred_at",
                    field=models.DateTimeField(),
                ),
                migrations.AlterField(
                    model_name="webhookdeliveryattempt",
                    name="delivery_event_occurred_at",
                    field=models.DateTimeField(),
                ),
            ],
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "CREATE UNIQUE INDEX CONCURRENTLY attempt_number_unique_keyed "
                    "ON webhooks_webhookdeliveryattempt "
                    "(delivery_id, number, delivery_event_occurred_at)",
                    migrations.RunSQL.noop,
                ),
                migrations.RunSQL(
                    "ALTER TABLE webhooks_webhookdeliveryattempt "
                    "DROP CONSTRAINT attempt_number_unique, "
                    "ADD CONSTRAINT attempt_number_unique "
                    "UNIQUE USING INDEX attempt_number_unique_keyed",
                    "ALTER TABLE webhooks_webhookdeliveryattempt "
                    "DROP CONSTRAINT attempt_number_unique, "
                    "ADD CONSTRAINT attempt_number_unique UNIQUE (delivery_id, number)",
                ),
            ],
            state_operations=[
                migrations.RemoveConstraint(
                    model_name="webhookdeliveryattempt", name="attempt_number_unique"
                ),
                migrations.AddConstraint(
                    model_name="webhookdeliveryattempt",
                    constraint=models.UniqueConstraint(
                        fields=("delivery", "number", "delivery_event_occurred_at"),
                        name="attempt_number_unique",
                    ),
                ),
            ],
        ),
    ]
