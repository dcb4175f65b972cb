"""`make run` serves the API from SQLite (DESIGN.md "Stack"): the suite's PostgreSQL cannot show
that a PostgreSQL-only statement (LATERAL, ARRAY, jsonb casts, data-modifying CTEs) reached a
request path, so this runs the demo's requests against a fresh SQLite file in a subprocess, the
way bin/run-dev configures it."""

import json
import os

from tests.api.test_settings import ROOT, manage, run_python

REQUESTS = """
import json, django
django.setup()
from django.test import Client
from accounts.abilities import ALL
from accounts.models import User
from accounts.services import api_key_create
from stores.models import Store

user = User.objects.get(username="demo")
store = Store.objects.get(slug="demo-store")
_, key = api_key_create(user=user, name="smoke", abilities=[ALL], current_store=store)
client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
statuses = {}
created = client.post(
    "/api/v1/coupons",
    {"code": "SMOKE1", "type": "PERCENTAGE", "discount": 10, "store_wide": True},
    content_type="application/json",
)
statuses["create"] = created.status_code
for name, path, headers in [
    ("me", "/api/v2/me", {}),
    ("stores", "/api/v2/stores", {}),
    ("coupons", "/api/v1/coupons?limit=5", {}),
    ("coupons_x_store", "/api/v1/coupons", {"HTTP_X_STORE": "demo-store"}),
    ("permissions", "/api/v2/permissions", {}),
    ("events", "/api/v2/events", {}),
    ("deliveries", "/api/v2/webhook-deliveries", {}),
]:
    statuses[name] = client.get(path, **headers).status_code
listed = client.get("/api/v1/coupons").json()["data"]
print(json.dumps({"statuses": statuses, "listed": listed}))
"""


def test_the_demo_requests_answer_on_sqlite(tmp_path):
    environment = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "DATABASE_URL"}}
    environment.update(
        DJANGO_SETTINGS_MODULE="config.settings.dev",
        STOREFRONT_VAR_DIR=str(tmp_path / "var"),
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "metrics"),
        DEBUG="true",
        SECURE_COOKIES="false",
        WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS="true",
        PYTHONPATH=str(ROOT),
    )
    for command in (("migrate", "--noinput"), ("seed_demo",)):
        result = manage(*command, environment=environment)
        assert result.returncode == 0, result.stderr

    result = run_python(REQUESTS, env=environment)

    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(answer["statuses"].values()) <= {200, 201}, answer["statuses"]
    [coupon] = answer["listed"]
    assert coupon["code"] == "SMOKE1"
    assert coupon["created_at"].endswith("Z")  # converted from SQLite's text, in UTC
