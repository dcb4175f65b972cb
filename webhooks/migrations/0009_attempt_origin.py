"""An attempt keeps the origin it was sent to, no longer the full URL: the path and query can be
a credential (issue 29 point 4; docs/decisions/hardening.md "Hardening IV"). Rows stored before
keep only their origin, as `url_origin` (webhooks/addresses.py) writes it."""

from urllib.parse import urlsplit

from django.db import migrations, models


def origin_of(url: str) -> str:
    """scheme://host[:port] of a URL; a frozen copy of webhooks.addresses.url_origin, as a
    migration must not change when the app's code does."""
    if not url:
        return ""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return ""  # not a URL any more: nothing of it is kept
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


def keep_origins(apps, schema_editor):
    attempt_model = apps.get_model("webhooks", "WebhookDeliveryAttempt")
    # Only rows with more than an origin: a path, a query or a trailing slash after the host.
    full = attempt_model.objects.filter(origin__regex=r"^[^:]+://[^/?#]*[/?#]")
    for attempt in full.only("pk", "origin").iterator(chunk_size=1000):
        attempt_model.objects.filter(pk=attempt.pk).update(origin=origin_of(attempt.origin))


class Migration(migrations.Migration):
    dependencies = [
        ("webhooks", "0008_scrub_stored_attempt_errors"),
    ]

    operations = [
        migrations.RenameField("webhookdeliveryattempt", "url", "origin"),
        migrations.RunPython(keep_origins, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="webhookdeliveryattempt",
            name="origin",
            field=models.CharField(blank=True, max_length=300),
        ),
    ]
