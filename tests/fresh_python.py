"""A Python process per settings test, without paying the interpreter's start and the imports
of Django, DRF, Celery and their kin each time: a process that has imported those libraries,
and nothing of ours, forks one child per script (docs/decisions/suite.md "The settings tests'
processes"). The child takes the script's environment and working directory before anything
reads them: no settings are loaded in the forking process (it checks), so each child loads
`config.settings` as a new process would.

What a fork cannot give, a real interpreter does: a script or command whose environment sets
Python's startup options (PYTHON* variables but PYTHONPATH, which the child applies) or a
variable a preloaded library reads when imported (PSYCOPG_IMPL) otherwise than this process
runs as a subprocess, as before.
"""

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

# Imported once in the forking process: the libraries `django.setup()` under our settings
# imports, none of which reads the environment or Django's settings when imported (the
# process checks the second). Not prometheus_client: it picks its value class from
# PROMETHEUS_MULTIPROC_DIR when imported.
PRELOADED = (
    "asyncio",
    "logging.config",
    "django.core.management",
    "django.db.models",
    "django.db.backends.postgresql.base",
    "django.contrib.postgres.fields",
    "django.forms",
    "django.http",
    "django.template",
    "django.urls",
    "django.views.generic",
    "rest_framework.serializers",
    "django_filters",
    "environ",
    "celery",
    "celery.app",
    "kombu",
    "amqp",
    "click",
    "redis",
    "requests",
    "urllib3",
    "psycopg",
    "cryptography.x509",
    "jwcrypto.jwk",
    "oauthlib.oauth2",
    "jinja2",
    "sqlparse",
    "pygments",
    "sentry_sdk",
    "yaml",
)

SERVER = r"""
import importlib, json, os, runpy, sys, traceback

for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
from django.conf import settings

assert not settings.configured, "a preloaded module loaded Django's settings"
base_path = [entry for entry in sys.path if entry not in ("", os.getcwd())]
requests_in, answers_out = sys.stdin.buffer, sys.stdout.buffer
for line in requests_in:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        # The child: the command's working directory, environment and output, then the command
        # as `python -c SCRIPT` or `python FILE ARGS` runs it; its exit (atexit handlers,
        # non-daemon threads) is a process's.
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for stream, path in ((1, request["stdout"]), (2, request["stderr"])):
            descriptor = os.open(path, os.O_WRONLY | os.O_TRUNC)
            os.dup2(descriptor, stream)
            os.close(descriptor)
        sys.stdin = open(os.devnull)
        extra = [entry for entry in request["env"].get("PYTHONPATH", "").split(os.pathsep) if entry]
        argv = request["argv"]
        try:
            if argv[0] == "-c":
                sys.argv = ["-c", *argv[2:]]
                sys.path[:] = ["", *extra, *base_path]
                exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
            else:
                sys.argv = argv
                sys.path[:] = [os.path.dirname(os.path.abspath(argv[0])), *extra, *base_path]
                runpy.run_path(argv[0], run_name="__main__")
        except SystemExit:
            raise
        except BaseException:
            traceback.print_exc()
            raise SystemExit(1)
        raise SystemExit(0)
    answers_out.write(json.dumps({"pid": pid}).encode() + b"\n")
    answers_out.flush()
    _, status = os.waitpid(pid, 0)
    answer = {"returncode": os.waitstatus_to_exitcode(status)}
    answers_out.write(json.dumps(answer).encode() + b"\n")
    answers_out.flush()
"""


def startup_environment(env: dict) -> dict:
    """What a fork would take from the forking process instead of `env`: Python's startup
    options (PYTHONPATH is applied in the child) and what a preloaded library reads when
    imported."""
    return {
        name: value
        for name, value in env.items()
        if (name.startswith("PYTHON") and name != "PYTHONPATH") or name.startswith("PSYCOPG")
    }


class ForkingPython:
    """The forking process, started at the first command (one per pytest-xdist worker)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.process = None
        # Without a settings module: a preloaded library that read the settings would fail.
        self.env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}

    def _server(self) -> subprocess.Popen:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(
                [sys.executable, "-c", SERVER, json.dumps(PRELOADED)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                cwd=Path(__file__).resolve().parent.parent,
                env=self.env,
            )
            atexit.register(self.close)
        return self.process

    def run(self, argv: list[str], *, env: dict, cwd: Path, timeout: float):
        """`subprocess.run([sys.executable, *argv], env=env, cwd=cwd, capture_output=True,
        text=True, timeout=timeout)`, from a forked child when `env` allows it."""
        command = [sys.executable, *argv]
        if startup_environment(env) != startup_environment(self.env):
            return subprocess.run(
                command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
            )
        with self.lock, tempfile.TemporaryDirectory() as folder:
            out, err = Path(folder, "stdout"), Path(folder, "stderr")
            out.touch()
            err.touch()
            server = self._server()
            request = {
                "argv": argv,
                "env": env,
                "cwd": str(cwd),
                "stdout": str(out),
                "stderr": str(err),
            }
            server.stdin.write(json.dumps(request).encode() + b"\n")
            server.stdin.flush()
            started = server.stdout.readline()
            if not started:
                raise RuntimeError(f"the forking Python ended (exit code {server.wait()})")
            pid = json.loads(started)["pid"]
            expired = threading.Event()
            timer = threading.Timer(timeout, lambda: (expired.set(), os.kill(pid, 9)))
            timer.start()
            try:
                returncode = json.loads(server.stdout.readline())["returncode"]
            finally:
                timer.cancel()
            if expired.is_set():
                raise subprocess.TimeoutExpired(command, timeout)
            return subprocess.CompletedProcess(
                command,
                returncode,
                out.read_text(errors="replace"),
                err.read_text(errors="replace"),
            )

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=30)


fresh_python = ForkingPython().run
