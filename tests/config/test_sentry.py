"""Optional error tracking: sentry-sdk is on only with SENTRY_DSN, with its
Django and Celery integrations, and what it sends carries the request id and no secret.

Each case runs in its own process (sentry_sdk.init is process-wide); the DSN points at an HTTP
server of the test, so nothing leaves the machine."""

import json
import os

from tests.settings_helpers import run_python

SECRET_TOKEN = "sf_secret_token_that_sentry_must_not_get"

PROBE = """
import json, django
django.setup()
import sentry_sdk
from django.test import Client
from django.test.utils import override_settings

client = sentry_sdk.get_client()
report = {"active": client.is_active(), "integrations": sorted(client.integrations)}
if client.is_active():
    report.update({k: client.options[k] for k in
                   ("send_default_pii", "max_request_body_size", "include_local_variables")})
with override_settings(ROOT_URLCONF="tests.core.api.urls"):
    response = Client(raise_request_exception=False).get(
        "/test-explode", {"api_key": "SECRET"}, HTTP_AUTHORIZATION="Bearer SECRET"
    )
report["status"] = response.status_code
report["request_id"] = response["X-Request-Id"]
sentry_sdk.flush(timeout=10)
print(json.dumps(report))
""".replace("SECRET", SECRET_TOKEN)


def probe(**env) -> dict:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("SENTRY_")}
    environment.update(DJANGO_SETTINGS_MODULE="config.settings.test", **env)
    result = run_python(PROBE, env=environment)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_without_sentry_dsn_sentry_is_not_initialised(ingest):
    report = probe()

    assert report["status"] == 500
    assert report["active"] is False
    assert ingest.bodies == []


def test_with_sentry_dsn_errors_are_sent_with_the_request_id_and_no_secret(ingest):
    report = probe(SENTRY_DSN=ingest.dsn)

    assert report["active"] is True
    assert {"django", "celery"} <= set(report["integrations"])
    assert report["send_default_pii"] is False
    assert report["max_request_body_size"] == "never"
    assert report["include_local_variables"] is False
    # the unexpected exception of the request reached the (local) Sentry, once
    [event] = ingest.events()
    assert event["exception"]["values"][-1]["type"] == "RuntimeError"
    assert event["tags"]["request_id"] == report["request_id"]
    # and no credential went with it: not the bearer token, not the query value
    assert all(SECRET_TOKEN.encode() not in body for body in ingest.bodies)
