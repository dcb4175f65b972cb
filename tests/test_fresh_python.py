"""tests/fresh_python.py: a forked child behaves as the new process it stands for (the settings
tests rely on it): its own environment, working directory, arguments, settings, exit code and
output; and startup options a fork cannot take get a real interpreter."""

import os
import subprocess
import sys

import pytest

from tests.fresh_python import fresh_python
from tests.settings_helpers import LOAD_SETTINGS, ROOT, production_environment

PROBE = (
    "import json, os, sys; from django.conf import settings; "
    "print(json.dumps([os.getcwd(), os.environ.get('PROBE'), sys.argv, sys.path[0], "
    "settings.configured, sys.flags.optimize])); sys.exit(3)"
)


def run(argv, env, cwd=ROOT, timeout=60):
    return fresh_python(argv, env=env, cwd=cwd, timeout=timeout)


def test_a_script_gets_its_environment_directory_arguments_and_exit_code(tmp_path):
    env = {**os.environ, "PROBE": "seen"}
    result = run(["-c", PROBE], env, cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    assert result.stdout.strip() == f'["{tmp_path}", "seen", ["-c"], "", false, 0]'
    assert result.args == [sys.executable, "-c", PROBE]


def test_each_child_loads_the_settings_its_environment_names():
    production = production_environment()
    dev = {**production, "DJANGO_SETTINGS_MODULE": "config.settings.dev", "DEBUG": "true"}
    assert run(["-c", LOAD_SETTINGS], production).stdout.strip() == "False"
    assert run(["-c", LOAD_SETTINGS], dev).stdout.strip() == "True"
    assert run(["-c", LOAD_SETTINGS], production).stdout.strip() == "False"


def test_an_uncaught_exception_prints_its_traceback_and_exits_1():
    result = run(["-c", "print('before'); raise ValueError('boom')"], dict(os.environ))
    assert result.returncode == 1
    assert result.stdout == "before\n"
    assert "Traceback" in result.stderr
    assert result.stderr.strip().endswith("ValueError: boom")


def test_a_file_runs_as_python_file_args():
    result = run(["manage.py", "version"], production_environment())
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().split(".")[0] == "5"


def test_a_startup_option_a_fork_cannot_take_gets_a_real_interpreter():
    # PYTHONOPTIMIZE is read when an interpreter starts: a forked child would keep 0
    result = run(["-c", PROBE], {**os.environ, "PYTHONOPTIMIZE": "1"})
    assert result.returncode == 3, result.stderr
    assert result.stdout.strip().endswith(", 1]")


def test_a_child_over_its_time_is_killed():
    with pytest.raises(subprocess.TimeoutExpired):
        run(["-c", "while True: pass"], dict(os.environ), timeout=1)
    # and the next command is served
    assert run(["-c", "print('next')"], dict(os.environ)).stdout == "next\n"
