"""Attempt errors stored before issue 23.1 hold the requests exception's text, in which urllib3
writes the destination's path and query (`Max retries exceeded with url: /hook?token=...`): a
credential. They are rewritten as new attempts store them, the failure's kind and the origin
(webhooks/sender.py), read from the text itself (`HTTPConnectionPool(host=..., port=...)`)."""

import re

from django.db import migrations

POOL = re.compile(r"(HTTPS?)ConnectionPool\(host='([^']*)', port=(\d+)\)")
# Which kind an old text names, first match wins (the words of urllib3 and requests).
KINDS = [
    ("TLS error", ("SSLError", "SSL:", "CERTIFICATE")),
    ("connect timeout", ("ConnectTimeout", "Connection to", "connect timeout")),
    ("timeout", ("ReadTimeout", "timed out", "Timeout")),
    ("DNS failure", ("NameResolutionError", "Failed to resolve", "Name or service not known")),
    ("connection refused", ("Connection refused",)),
    ("connection error", ("ConnectionError", "NewConnectionError", "Connection aborted")),
]


def scrubbed(error: str) -> str | None:
    """The stored text of `error` as new attempts store it; None when it holds no URL."""
    pool = POOL.search(error)
    if pool is None and " url: " not in error:
        return None
    kind = next(
        (kind for kind, words in KINDS if any(word in error for word in words)), "request error"
    )
    if pool is None:
        return kind
    scheme, host, port = pool.groups()
    host = f"[{host}]" if ":" in host else host
    return f"{kind}: {scheme.lower()}://{host}:{port}"


def scrub(apps, schema_editor):
    attempt_model = apps.get_model("webhooks", "WebhookDeliveryAttempt")
    suspects = attempt_model.objects.filter(error__contains="url: ") | attempt_model.objects.filter(
        error__contains="ConnectionPool("
    )
    for attempt in suspects.only("pk", "error").iterator(chunk_size=1000):
        new_error = scrubbed(attempt.error)
        if new_error is not None:
            attempt_model.objects.filter(pk=attempt.pk).update(error=new_error)


class Migration(migrations.Migration):
    dependencies = [
        ("webhooks", "0007_send_slots"),
    ]

    operations = [migrations.RunPython(scrub, migrations.RunPython.noop)]
