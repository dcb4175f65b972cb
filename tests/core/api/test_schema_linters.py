"""/api/schema/ checked by two OpenAPI linters we did not write: Redocly's `lint` (recommended
rules) and Stoplight's Spectral (oas ruleset). Both must find nothing, warnings included; the
rules turned off are in tests/external/ (redocly.yaml, .spectral.yaml), each with its reason."""

import json
import os
import subprocess
from pathlib import Path

import pytest
from rest_framework.test import APIClient

EXTERNAL = Path(__file__).resolve().parents[2] / "external"
SCHEMA_FILE = EXTERNAL / "build" / "schema.yaml"
QUIET_NODE = {
    **os.environ,
    "REDOCLY_TELEMETRY": "off",
    "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true",
    "NO_UPDATE_NOTIFIER": "1",
}


@pytest.fixture(scope="module")
def served_schema(django_db_blocker) -> Path:
    with django_db_blocker.unblock():
        response = APIClient().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi")
    assert response.status_code == 200
    SCHEMA_FILE.parent.mkdir(exist_ok=True)
    SCHEMA_FILE.write_bytes(response.content)
    return SCHEMA_FILE


def _run(*command: str) -> subprocess.CompletedProcess:
    binary = EXTERNAL / "node_modules" / ".bin" / command[0]
    if not binary.exists():
        pytest.fail(f"{binary} is missing: run `make test` (it runs npm ci in tests/external)")
    return subprocess.run(
        [str(binary), *command[1:]],
        cwd=EXTERNAL,
        env=QUIET_NODE,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_redocly_lint_finds_no_error_and_no_warning(served_schema):
    run = _run(
        "redocly",
        "lint",
        str(served_schema.relative_to(EXTERNAL)),
        "--config",
        "redocly.yaml",
        "--format",
        "json",
    )
    report = json.loads(run.stdout)
    problems = [
        f"{problem['severity']} {problem['ruleId']}: {problem['message']} at "
        + ", ".join(location["pointer"] for location in problem["location"])
        for problem in report["problems"]
        if not problem.get("ignored")
    ]
    assert problems == [], run.stderr
    assert report["totals"]["errors"] == report["totals"]["warnings"] == 0


def test_spectral_oas_ruleset_finds_nothing(served_schema):
    run = _run(
        "spectral",
        "lint",
        str(served_schema.relative_to(EXTERNAL)),
        "--ruleset",
        ".spectral.yaml",
        "--format",
        "json",
        "--fail-severity",
        "hint",
        "--quiet",
    )
    problems = [
        f"{problem['code']}: {problem['message']} at {'.'.join(map(str, problem['path']))}"
        for problem in json.loads(run.stdout or "[]")
    ]
    assert problems == [], run.stderr
    assert run.returncode == 0, run.stderr
