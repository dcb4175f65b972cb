"""One name for one thing: the channels' table, the delivery's foreign key, the indexes and the
send slots' scope say channel. Renames only: no row is rewritten. The send-slot function names
the channels' table, so it is made anew over the renamed one (its parameters renamed too)."""

from importlib import import_module

from django.db import migrations, models

send_slots = import_module("webhooks.migrations.0007_send_slots")

SLOTS_TAKE_CREATE = send_slots.SLOTS_TAKE_CREATE.replace(
    "webhooks_webhookdestination", "webhooks_webhookchannel"
).replace("destination", "channel")


class Migration(migrations.Migration):
    dependencies = [("webhooks", "0014_recover_budget")]

    operations = [
        migrations.AlterModelTable(name="webhookchannel", table=None),
        migrations.RenameIndex(
            model_name="webhookchannel",
            new_name="channel_failing_idx",
            old_name="destination_failing_idx",
        ),
        migrations.RenameField(
            model_name="webhookdelivery", old_name="destination", new_name="channel"
        ),
        # The index's fields name the renamed foreign key: in the state it is a new index; in
        # the database only its name changes.
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER INDEX delivery_destination_due_idx RENAME TO delivery_channel_due_idx",
                    "ALTER INDEX delivery_channel_due_idx RENAME TO delivery_destination_due_idx",
                )
            ],
            state_operations=[
                migrations.RemoveIndex(
                    model_name="webhookdelivery", name="delivery_destination_due_idx"
                ),
                migrations.AddIndex(
                    model_name="webhookdelivery",
                    index=models.Index(
                        condition=models.Q(("status", "pending")),
                        fields=["channel", "next_attempt_at"],
                        name="delivery_channel_due_idx",
                    ),
                ),
            ],
        ),
        migrations.AlterField(
            model_name="webhookchannel",
            name="disabled_reason",
            field=models.CharField(
                blank=True,
                choices=[
                    ("user", "disabled by a user"),
                    ("gone", "the receiver answered 410 Gone"),
                    ("failing", "every attempt failed for too long"),
                ],
                default="",
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="webhooksendslot",
            name="scope",
            field=models.PositiveSmallIntegerField(
                choices=[(1, "channel"), (2, "account"), (3, "failing channels")]
            ),
        ),
        migrations.RunSQL(
            [send_slots.SLOTS_TAKE_DROP, SLOTS_TAKE_CREATE],
            [
                send_slots.SLOTS_TAKE_DROP,
                send_slots.SLOTS_TAKE_CREATE,
            ],
        ),
    ]
