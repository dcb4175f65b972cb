"""Production settings refuse the default secret key (DESIGN.md "Configuration")."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
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


def load_production(**env):
    environment = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    environment.update(DJANGO_SETTINGS_MODULE="config.settings.production", **env)
    return run_python(LOAD_SETTINGS, env=environment)


def test_production_refuses_the_default_secret_key():
    result = load_production()
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "SECRET_KEY" in result.stderr


def test_production_refuses_a_short_secret_key():
    assert load_production(SECRET_KEY="short").returncode != 0


def test_production_starts_with_a_real_secret_key():
    result = load_production(SECRET_KEY="x" * 50)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_the_embedded_broker_keeps_its_files_under_the_var_dir(tmp_path):
    # given: `make run`'s defaults (no REDIS_URL: kombu's filesystem broker), started elsewhere
    var_dir, cwd = tmp_path / "var", tmp_path / "cwd"
    (var_dir / "broker" / "processed").mkdir(parents=True)
    cwd.mkdir()
    environment = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "DATABASE_URL"}}
    environment.update(
        DJANGO_SETTINGS_MODULE="config.settings.dev",
        STOREFRONT_VAR_DIR=str(var_dir),
        PYTHONPATH=str(ROOT),
    )
    # when: a broadcast (celery control) goes through the broker's exchange table
    script = "import django; django.setup(); from config.celery import app; app.control.ping()"
    result = run_python(script, env=environment, cwd=cwd)
    # then: nothing is written into the working directory
    assert result.returncode == 0, result.stderr
    assert list(cwd.iterdir()) == []
    assert (var_dir / "broker" / "control").is_dir()
