"""Recover's budget per store (WebhookRecovery, one row per call) and the mark of a delivery a
recover queued, so that its event is not missed by that channel twice (docs/decisions/
hardening.md, Hardening V, 5). The column has a constant default: PostgreSQL adds it to the
partitioned deliveries without rewriting them."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("stores", "0001_initial"),
        ("webhooks", "0013_partitioned_by_day"),
    ]

    operations = [
        migrations.AddField(
            model_name="webhookdelivery",
            name="recovered",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.CreateModel(
            name="WebhookRecovery",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("channel_id", models.BigIntegerField()),
                ("queued", models.PositiveIntegerField(default=0)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "store",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="stores.store",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["store", "created_at"], name="recovery_store_created_idx")
                ],
            },
        ),
    ]
