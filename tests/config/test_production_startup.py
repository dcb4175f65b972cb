"""Production starts only with an https BASE_URL, its OAuth issuer; `make run`'s opt-ins stay
possible under it, but every process (web, worker, beat) names each in a WARNING when it starts
and /status lists them (docs/decisions/hardening.md, "Hardening IV", 6)."""

import json
import subprocess
import sys

import pytest
import requests

from tests.servers import Gunicorn, stop_process, wait_for
from tests.settings_helpers import LOAD_SETTINGS, ROOT, production_environment, run_python

OPT_INS = {"WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS": "true", "SECURE_COOKIES": "false"}
OPT_IN_NAMES = ["WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS", "SECURE_COOKIES=false"]


@pytest.mark.parametrize(
    "base_url",
    [
        None,
        "",
        "http://api.example.com",
        "https://",
        "api.example.com",
        "https://api.example.com/?next=x",
    ],
    ids=["unset", "empty", "http", "no-host", "no-scheme", "query"],
)
def test_production_refuses_to_start_without_an_https_base_url(base_url):
    result = run_python(LOAD_SETTINGS, env=production_environment(BASE_URL=base_url))

    assert result.returncode != 0
    # one line says what is wrong and what to set
    (line,) = [
        line
        for line in result.stderr.splitlines()
        if line.startswith("django.core.exceptions.ImproperlyConfigured")
    ]
    assert "Production needs BASE_URL set to the service's public https root" in line
    assert "e.g. https://api.example.com" in line


def test_the_https_base_url_is_the_oauth_issuer_and_the_root_of_links():
    script = (
        "import json, django; django.setup(); from django.conf import settings as s; "
        "print(json.dumps([s.BASE_URL, s.OAUTH2_PROVIDER['OIDC_ISS_ENDPOINT'], "
        "s.SPECTACULAR_SETTINGS['SERVERS'][0]['url']]))"
    )
    result = run_python(script, env=production_environment(BASE_URL="https://shop.example.com/"))

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == ["https://shop.example.com"] * 3


def opt_in_warnings(output: str) -> list[str]:
    return [line for line in output.splitlines() if "development opt-in" in line]


def assert_names_each_opt_in(output: str) -> None:
    warnings = opt_in_warnings(output)
    for name in OPT_IN_NAMES:
        assert [line for line in warnings if f" {name} " in line and "WARNING" in line], output


def test_the_web_process_warns_of_each_opt_in_and_status_lists_them(tmp_path):
    with Gunicorn(tmp_path / "opt-ins.log", workers=1, LOG_FORMAT="plain", **OPT_INS) as web:
        response = requests.get(f"{web.base}/status", headers={"Host": "127.0.0.1"}, timeout=10)
        # then: /status lists them (and does not fail for them)
        assert response.json()["checks"]["development_opt_ins"] == {
            "status": "ok",
            "enabled": OPT_IN_NAMES,
        }
        assert "development_opt_ins" not in response.json()["failing"]
        # and the worker process logged a WARNING naming each when it started
        wait_for(
            lambda: len(opt_in_warnings(web.log_path.read_text())) >= 2,
            timeout=10,
            what="the opt-in warnings",
        )
        assert_names_each_opt_in(web.log_path.read_text())


def test_without_opt_ins_nothing_is_warned_nor_listed(tmp_path):
    with Gunicorn(tmp_path / "plain.log", workers=1, LOG_FORMAT="plain") as web:
        response = requests.get(f"{web.base}/status", headers={"Host": "127.0.0.1"}, timeout=10)

        assert "development_opt_ins" not in response.json()["checks"]
        assert opt_in_warnings(web.log_path.read_text()) == []


@pytest.mark.worker
@pytest.mark.parametrize(
    ("command", "started"),
    [
        # a queue of its own: it takes no task of another test
        (["worker", "--pool", "solo", "-Q", "startup-warnings"], "ready."),
        (["beat", "--schedule", "{tmp}/beat-schedule"], "beat: Starting"),
    ],
    ids=["worker", "beat"],
)
def test_celery_processes_warn_of_each_opt_in_at_start(command, started, own_redis, tmp_path):
    # given: the production settings with both opt-ins, on a Redis of their own
    environment = production_environment(
        **OPT_INS,
        REDIS_URL=own_redis.url,
        LOG_FORMAT="plain",
        BEAT_HEARTBEAT_SECONDS="0.5",
        BEAT_LOCK_SECONDS="2",
    )
    log = tmp_path / "celery.log"
    arguments = [part.format(tmp=tmp_path) for part in command]
    # when: the process starts
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", *arguments, "--loglevel=INFO"],
            cwd=ROOT,
            env=environment,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for(
            lambda: started in log.read_text(errors="replace"),
            timeout=60,
            what=f"celery {command[0]} started",
            process=process,
            log=lambda: log.read_text(errors="replace")[-3000:],
        )
    finally:
        stop_process(process)
    # then: it named each opt-in in a WARNING before it started its work
    output = log.read_text(errors="replace")
    assert_names_each_opt_in(output)
    assert output.index("development opt-in") < output.index(started)
