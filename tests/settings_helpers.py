"""Settings as a fresh process loads them (tests of settings, deployment, static files, logs):
the environment docs/production.md documents, a Python or manage.py subprocess under it, and the
settings it ends up with."""

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RANDOM_KEY = secrets.token_urlsafe(50)
LOAD_SETTINGS = (
    "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)"
)


def run_python(script: str, *, env: dict, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


# The environment docs/production.md documents (REDIS_URL and DATABASE_URL: the test ones).
RELAXATIONS = ("DEBUG", "SECURE_COOKIES", "WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS", "NUM_PROXIES")


def production_environment(**env) -> dict:
    environment = {
        k: v
        for k, v in os.environ.items()
        if k not in {"SECRET_KEY", "ALLOWED_HOSTS", "BASE_URL", *RELAXATIONS}
    }
    environment.update(
        DJANGO_SETTINGS_MODULE="config.settings.production",
        SECRET_KEY=RANDOM_KEY,
        ALLOWED_HOSTS="api.example.com",
        BASE_URL="https://api.example.com",
        STOREFRONT_DOMAIN="example.com",
    )
    environment.update(env)
    return {k: v for k, v in environment.items() if v is not None}


def settings_of(environment: dict, *names: str) -> dict:
    script = (
        "import json, django; django.setup(); from django.conf import settings; "
        f"print(json.dumps({{n: getattr(settings, n, None) for n in {list(names)!r}}}))"
    )
    result = run_python(script, env=environment)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def manage(*args: str, environment: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
