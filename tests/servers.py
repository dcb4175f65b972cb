"""Servers the tests start beside bin/with-test-services' PostgreSQL and Redis: free loopback
ports, and Debian's PgBouncer in transaction mode (bin/install-test-deps installs it), the
set-up docs/scaling.md gives for many processes, used by the send-slot tests and the database
fault run."""

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

BINARY = "/usr/sbin/pgbouncer"


def as_postgres_user() -> list[str]:
    """PostgreSQL and PgBouncer refuse to run as root: bin/with-test-services runs them as the
    packaged `postgres` user then, and so do the tests."""
    return ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PgBouncer:
    """PgBouncer in transaction mode with `pool_size` server connections (trust auth); a
    context manager that starts and stops it."""

    def __init__(self, server_port: int, *, pool_size: int = 10):
        if not Path(BINARY).exists():
            pytest.fail(f"{BINARY} is missing: bin/install-test-deps installs pgbouncer")
        self.port = free_port()
        # Under the services' directory (readable by `postgres`), not pytest's private tmp.
        self.dir = Path(
            tempfile.mkdtemp(prefix="pgbouncer-", dir=os.environ.get("STOREFRONT_TEST_WORKDIR"))
        )
        user = urlsplit(os.environ["DATABASE_URL"]).username
        (self.dir / "userlist.txt").write_text(f'"{user}" ""\n')
        (self.dir / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host=127.0.0.1 port={server_port}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            "unix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {self.dir / 'userlist.txt'}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {pool_size}\n"
            "max_client_conn = 200\n"
            "ignore_startup_parameters = extra_float_digits,options\n"
            f"logfile = {self.dir / 'pgbouncer.log'}\n"
            f"pidfile = {self.dir / 'pgbouncer.pid'}\n"
        )
        if os.getuid() == 0:
            shutil.chown(self.dir, "postgres")
            for path in self.dir.iterdir():
                shutil.chown(path, "postgres")
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> "PgBouncer":
        self.process = subprocess.Popen(
            [*as_postgres_user(), BINARY, str(self.dir / "pgbouncer.ini")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while True:
            assert self.process.poll() is None, self.log()
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                assert time.monotonic() < deadline, "PgBouncer did not start within 30 s"
                time.sleep(0.1)

    def __exit__(self, *exc_info) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def database_url(self, name: str) -> str:
        """DATABASE_URL through this PgBouncer, to the database `name`."""
        parts = urlsplit(os.environ["DATABASE_URL"])
        netloc = f"{parts.netloc.rsplit(':', 1)[0]}:{self.port}"
        return urlunsplit(parts._replace(netloc=netloc, path=f"/{name}"))

    def log(self) -> str:
        path = self.dir / "pgbouncer.log"
        return path.read_text(errors="replace") if path.exists() else ""
