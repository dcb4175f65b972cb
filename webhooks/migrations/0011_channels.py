"""Issue 31: the store's one destination becomes one of its several channels.

Nothing is lost: each destination row becomes a channel row in place (the table keeps its
name, so its id, URL, subscriptions, enabled/disabled state, failure clock, send slots and
every delivery, pending ones included, stay as they are), and its secret and previous secret
(with their grace) become the store-wide signing secret. Staff permissions on destinations carry
over to channels.
"""

import uuid

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


def secrets_to_store(apps, schema_editor):
    destination_model = apps.get_model("webhooks", "WebhookDestination")
    secret_model = apps.get_model("webhooks", "WebhookSigningSecret")
    rows = destination_model.objects.values_list(
        "store_id", "secret", "previous_secret", "previous_secret_expires_at", "updated_at"
    )
    batch = []
    for store_id, secret, previous, expires, updated_at in rows.iterator(chunk_size=1000):
        batch.append(
            secret_model(
                store_id=store_id,
                secret=secret,
                previous_secret=previous,
                previous_secret_expires_at=expires,
                updated_at=updated_at,
            )
        )
        if len(batch) == 1000:
            secret_model.objects.bulk_create(batch)
            batch = []
    secret_model.objects.bulk_create(batch)


def secrets_to_destinations(apps, schema_editor):
    """Backwards: each destination gets its store's secret back."""
    destination_model = apps.get_model("webhooks", "WebhookDestination")
    secret_model = apps.get_model("webhooks", "WebhookSigningSecret")
    for found in secret_model.objects.all().iterator(chunk_size=1000):
        destination_model.objects.filter(store_id=found.store_id).update(
            secret=found.secret,
            previous_secret=found.previous_secret,
            previous_secret_expires_at=found.previous_secret_expires_at,
        )


def uids_fill(apps, schema_editor):
    channel_model = apps.get_model("webhooks", "WebhookChannel")
    for pk in channel_model.objects.values_list("pk", flat=True).iterator(chunk_size=1000):
        channel_model.objects.filter(pk=pk).update(uid=uuid.uuid4())


def permissions_rename(old: str, new: str):
    def rename(apps, schema_editor):
        permission_model = apps.get_model("auth", "Permission")
        for action in ("add", "change", "delete", "view"):
            permission_model.objects.filter(
                content_type__app_label="webhooks", codename=f"{action}_{old}"
            ).update(codename=f"{action}_{new}", name=f"Can {action} webhook {new[7:]}")

    return rename


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("stores", "0001_initial"),
        ("webhooks", "0010_destination_write_records_withhold"),
    ]

    operations = [
        migrations.CreateModel(
            name="WebhookSigningSecret",
            fields=[
                (
                    "store",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="stores.store",
                    ),
                ),
                ("secret", models.CharField(max_length=1400)),
                ("previous_secret", models.CharField(blank=True, default="", max_length=1400)),
                ("previous_secret_expires_at", models.DateTimeField(blank=True, null=True)),
                ("updated_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
        ),
        migrations.RunPython(secrets_to_store, secrets_to_destinations),
        # A default first, so that migrating back re-adds the column to existing rows (the
        # backwards RunPython above then fills it in).
        migrations.AlterField(
            model_name="webhookdestination",
            name="secret",
            field=models.CharField(default="", max_length=100),
        ),
        migrations.RemoveField(model_name="webhookdestination", name="secret"),
        migrations.RemoveField(model_name="webhookdestination", name="previous_secret"),
        migrations.RemoveField(model_name="webhookdestination", name="previous_secret_expires_at"),
        # The table keeps its name (the claim and wake-up SQL names it): set first, so the
        # rename below renames no table.
        migrations.AlterModelTable(name="webhookdestination", table="webhooks_webhookdestination"),
        migrations.RenameModel(old_name="WebhookDestination", new_name="WebhookChannel"),
        migrations.RunPython(
            permissions_rename("webhookdestination", "webhookchannel"),
            permissions_rename("webhookchannel", "webhookdestination"),
        ),
        migrations.AlterField(
            model_name="webhookchannel",
            name="store",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="webhook_channels",
                to="stores.store",
            ),
        ),
        migrations.AddField(
            model_name="webhookchannel",
            name="name",
            field=models.CharField(blank=True, max_length=100, null=True),
        ),
        # Each existing channel its own UUID, then the column becomes unique and required.
        migrations.AddField(
            model_name="webhookchannel", name="uid", field=models.UUIDField(null=True)
        ),
        migrations.RunPython(uids_fill, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="webhookchannel",
            name="uid",
            field=models.UUIDField(default=uuid.uuid4, editable=False, unique=True),
        ),
        migrations.AddConstraint(
            model_name="webhookchannel",
            constraint=models.UniqueConstraint(
                fields=("store", "url"), name="channel_store_url_unique"
            ),
        ),
    ]
