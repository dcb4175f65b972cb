"""Idempotency records of destination writes stored before issue 29 points 3 and 4 hold the URL
in clear and the secret's digest without the credential it was shown to. They are rewritten
to the shape core/api/idempotency.py's `Withheld` stores (webhooks/views.py SECRET_WITHHELD,
URL_WITHHELD): the URL as its digest and origin; the secret's digest bound to no credential,
so a replay of one of them is a 409 (a new key) rather than the secret shown to any credential
of the user. They expire within IDEMPOTENCY_KEY_TTL (24 h) anyway."""

import hashlib
from urllib.parse import urlsplit

from django.db import migrations

OPERATIONS = ("webhooks.destination_put", "webhooks.destination_rotate_secret")
# Matches no credential's digest (a SHA-256 is hex).
NO_CREDENTIAL = "none"


def origin_of(url: str) -> str:
    """A frozen copy of webhooks.addresses.url_origin (as in migration 0009)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return ""
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


def withheld(value: str, *, kept, credential) -> dict:
    return {
        "sha256": hashlib.sha256(value.encode()).hexdigest(),
        "kept": kept,
        "credential": credential,
    }


def rewrite(apps, schema_editor):
    record_model = apps.get_model("api", "IdempotencyKey")
    records = record_model.objects.filter(operation__in=OPERATIONS, response_status__lt=300)
    for record in records.only("pk", "response_body").iterator(chunk_size=500):
        body = record.response_body
        resource = body.get("data") if isinstance(body, dict) else None
        if not isinstance(resource, dict):
            continue
        if isinstance(resource.get("url"), str):
            url = resource["url"]
            resource["url"] = withheld(url, kept=origin_of(url), credential=None)
        secret_digest = resource.pop("secret_sha256", None)
        if secret_digest is not None:
            resource["secret"] = {
                "sha256": secret_digest,
                "kept": None,
                "credential": NO_CREDENTIAL,
            }
        record_model.objects.filter(pk=record.pk).update(response_body=body)


class Migration(migrations.Migration):
    dependencies = [
        ("api", "0001_initial"),
        ("webhooks", "0009_attempt_origin"),
    ]

    operations = [migrations.RunPython(rewrite, migrations.RunPython.noop)]
