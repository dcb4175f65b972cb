"""Reproducible installs: the lock files pin, with hashes, versions inside pyproject.toml's
ranges, the suite runs on exactly those, and the wheel of `pip install .` holds a service that
runs (apps, migrations, templates)."""

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.settings_helpers import run_python

ROOT = Path(__file__).resolve().parent.parent
BUILD_WHEEL = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
NOT_SOURCE = (".git", ".venv", ".lock-venv", "build", "*.egg-info", "var", "staticfiles")
NOT_SOURCE += ("__pycache__", ".pytest_cache", ".ruff_cache")
APPS = ("accounts", "stores", "coupons", "orders", "events", "webhooks", "oauth_cli")


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def locked(name: str) -> dict[str, tuple[str, list[str]]]:
    """{package: (version, hashes)} of requirements/<name>.txt, for this interpreter's markers."""
    pins: dict[str, tuple[str, list[str]]] = {}
    current = None
    for raw in (ROOT / "requirements" / f"{name}.txt").read_text().splitlines():
        line = raw.strip().rstrip("\\").strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("--hash="):
            if current is not None:
                pins[current][1].append(line.removeprefix("--hash="))
            continue
        requirement = Requirement(line)
        (specifier,) = requirement.specifier
        assert specifier.operator == "==", line
        current = canonicalize_name(requirement.name)
        if requirement.marker is not None and not requirement.marker.evaluate():
            current = None
            continue
        pins[current] = (specifier.version, [])
    return pins


@pytest.mark.parametrize("lock", ["run", "dev"])
def test_every_locked_package_is_pinned_with_hashes(lock):
    pins = locked(lock)

    assert pins
    assert [name for name, (_, hashes) in pins.items() if not hashes] == []


@pytest.mark.parametrize(
    ("lock", "requirements"),
    [
        ("run", lambda p: p["dependencies"]),
        ("dev", lambda p: p["dependencies"] + p["optional-dependencies"]["dev"]),
    ],
)
def test_the_lock_pins_every_dependency_inside_its_range(lock, requirements):
    pins = locked(lock)

    for line in requirements(project()):
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is missing from requirements/{lock}.txt: run `make lock`"
        assert requirement.specifier.contains(pins[name][0], prereleases=True), (
            f"requirements/{lock}.txt pins {name}=={pins[name][0]} outside {line!r}: "
            "run `make lock`"
        )


def test_run_and_dev_install_the_same_versions_of_what_they_share():
    run, dev = locked("run"), locked("dev")

    assert {name: dev[name][0] for name in run} == {
        name: version for name, (version, _) in run.items()
    }


def test_the_suite_runs_on_the_locked_versions():
    installed = {
        canonicalize_name(distribution.metadata["Name"]): distribution.version
        for distribution in metadata.distributions()
    }

    wrong = {
        name: (version, installed.get(name))
        for name, (version, _) in locked("dev").items()
        if installed.get(name) != version
    }
    assert wrong == {}, "locked vs installed; reinstall with `make install`"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # From a copy of the tree: setuptools' build/ directory keeps files deleted from the source
    # and would ship them; the copy also leaves nothing behind in the checkout.
    source = tmp_path_factory.mktemp("source") / "storefront"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*NOT_SOURCE))
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [*BUILD_WHEEL, str(source), "-w", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    (built,) = out.glob("storefront-*.whl")
    return built


def test_the_wheel_holds_the_apps_their_migrations_config_and_templates(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())

    for app in APPS:
        assert f"{app}/models.py" in names
        assert f"{app}/migrations/__init__.py" in names
    assert "webhooks/migrations/0001_initial.py" in names
    assert "config/settings/production.py" in names
    assert "config/wsgi.py" in names and "config/celery.py" in names
    assert {"templates/500.html", "templates/oauth_cli/consent.html"} <= names
    assert {"templates/registration/login.html", "templates/docs/errors.html"} <= names
    # the service only: no tests, benchmarks, scripts or development tools in site-packages
    outside = {"tests", "bench", "bin", "docs", "devtools"}
    assert not {name for name in names if name.split("/")[0] in outside}


def test_a_service_installed_from_the_wheel_finds_its_templates_and_migrations(wheel, tmp_path):
    # given: the wheel unpacked as site-packages would hold it, run from an unrelated directory
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    script = (
        f"SITE = {str(site)!r}; import json, django, config; django.setup(); "
        "from django.template.loader import get_template; "
        "from django.db.migrations.loader import MigrationLoader; "
        "assert config.__file__.startswith(SITE), config.__file__; "
        "get_template('oauth_cli/consent.html'); get_template('500.html'); "
        "loader = MigrationLoader(None); "
        "print(json.dumps(sorted({app for app, _ in loader.disk_migrations})))"
    )
    environment = {
        **os.environ,
        "PYTHONPATH": str(site),
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
    }

    # when
    result = run_python(script, env=environment, cwd=elsewhere)

    # then
    assert result.returncode == 0, result.stderr
    assert set(APPS) <= set(json.loads(result.stdout.strip().splitlines()[-1]))
