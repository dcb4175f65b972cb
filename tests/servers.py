"""Servers the tests start beside bin/with-test-services' PostgreSQL and Redis, on free loopback
ports: a Redis that tests stop and start again, Debian's PgBouncer in transaction mode
(bin/install-test-deps installs it), the set-up docs/scaling.md gives for many processes (the
send-slot tests, the database fault run), gunicorn under the production settings (the fault
runs, static files, large bodies), a Sentry ingest that records what a client reports, and a
streaming replica of the suite's PostgreSQL (the journal's replica reads)."""

import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
import requests

from devtools.postgres_server import PostgresServer
from tests.settings_helpers import ROOT, production_environment

BINARY = "/usr/sbin/pgbouncer"


def as_postgres_user() -> list[str]:
    """PgBouncer refuses to run as root: it runs as the `postgres` user then, as PostgreSQL does
    (devtools/postgres_server.py)."""
    return ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop_process(process: subprocess.Popen | None) -> None:
    """SIGTERM, then SIGKILL what has not ended within 30 s."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def wait_for(
    condition, *, timeout: float, what: str, interval: float = 0.05, process=None, log=None
):
    """Polls `condition()` every `interval` s and returns its first true answer. Fails naming
    `what` (followed by `log()`, if given) after `timeout` s, or as soon as `process` (a Popen
    that should stay up meanwhile) has ended."""
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if process is not None and process.poll() is not None:
            failure = f"the process ended (exit code {process.returncode})"
        elif time.monotonic() > deadline:
            failure = f"not within {timeout:g} s"
        else:
            time.sleep(interval)
            continue
        raise AssertionError(f"{what}: {failure}" + (f"\n{log()}" if log else ""))
    return result


def answers(url: str, **kwargs) -> bool:
    """Whether GET `url` answers 200 (False while nothing listens or it is still loading)."""
    try:
        return requests.get(url, timeout=10, **kwargs).status_code == 200
    except requests.RequestException:
        return False


class ThrowawayRedis:
    """A redis-server in `workdir` on a free loopback port (or `port`: the suite's own, with
    bin/with-test-services' directory, which stops it at the end); `stop` and `start` again
    keep the port, as a restarted production Redis would. No persistence: a restart comes back
    empty (queued messages, rate-limit counters and sign-in counters are gone)."""

    def __init__(self, workdir: Path, *, port: int | None = None):
        self.workdir = workdir
        self.port = port or free_port()
        self.starts = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def ping(self) -> bool:
        result = subprocess.run(
            ["redis-cli", "-p", str(self.port), "ping"], capture_output=True, timeout=5
        )
        return result.returncode == 0 and result.stdout.strip() == b"PONG"

    def start(self) -> None:
        self.starts += 1
        subprocess.run(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--daemonize", "yes",
             "--pidfile", str(self.workdir / "redis.pid"),
             "--logfile", str(self.workdir / f"redis-{self.starts}.log"),
             "--dir", str(self.workdir)],
            check=True,
            timeout=10,
        )  # fmt: skip
        wait_for(self.ping, timeout=10, what=f"redis on {self.port} started")

    def stop(self) -> None:
        """SHUTDOWN NOSAVE: clients see their connections closed and new ones refused."""
        subprocess.run(
            ["redis-cli", "-p", str(self.port), "shutdown", "nosave"],
            capture_output=True,
            timeout=5,
        )
        wait_for(lambda: not self.ping(), timeout=10, what=f"redis on {self.port} stopped")

    def close(self) -> None:
        if self.ping():
            self.stop()


def debian_bin() -> Path:
    """The newest of Debian's PostgreSQL servers, as bin/with-test-services picks it."""
    return max(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda path: float(path.parent.name))


def worker_postgresql(workdir: Path) -> PostgresServer:
    """A pytest-xdist worker's own PostgreSQL, started through the one launcher with the options
    bin/with-test-services gives the suite's: the event journal serves rows below a server-wide
    transaction horizon (events/positions.py), so an open transaction of another worker's test
    would hide a test's events."""
    server = PostgresServer(
        workdir / "pg",
        debian_bin(),
        port=free_port(),
        fsync="off",
        synchronous_commit="off",
        full_page_writes="off",
        max_connections="200",
    )
    server.start()
    return server


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
        wait_for(
            self._accepts,
            timeout=30,
            what="PgBouncer accepting",
            process=self.process,
            log=self.log,
        )
        return self

    def _accepts(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def __exit__(self, *exc_info) -> None:
        stop_process(self.process)
        shutil.rmtree(self.dir, ignore_errors=True)

    def database_url(self, name: str) -> str:
        """DATABASE_URL through this PgBouncer, to the database `name`."""
        parts = urlsplit(os.environ["DATABASE_URL"])
        netloc = f"{parts.netloc.rsplit(':', 1)[0]}:{self.port}"
        return urlunsplit(parts._replace(netloc=netloc, path=f"/{name}"))

    def log(self) -> str:
        path = self.dir / "pgbouncer.log"
        return path.read_text(errors="replace") if path.exists() else ""


class Gunicorn:
    """`gunicorn config.wsgi` under config.settings.production with `workers` sync workers, or
    with `config_file` as docs/production.md runs it (config/gunicorn.conf.py's worker class
    and threads; `workers` None: WEB_CONCURRENCY's), plain HTTP on a free loopback port (no SSL
    redirect: as behind a proxy that terminates TLS, production_environment's https BASE_URL
    being the public root); `environment` over those and production_environment's (None: the
    production default). A context manager that starts it, waits for /healthz (asked for the
    first of ALLOWED_HOSTS), and stops it."""

    def __init__(
        self, log_path: Path, *, workers: int | None, config_file: bool = False, **environment: str
    ):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.workers = workers
        self.config_file = config_file
        self.log_path = log_path
        self.environment = production_environment(
            **{
                "ALLOWED_HOSTS": "127.0.0.1",
                "SECURE_SSL_REDIRECT": "false",
                # config/gunicorn.conf.py's control socket goes there.
                **({"STOREFRONT_VAR_DIR": str(log_path.parent)} if config_file else {}),
                **environment,
            }
        )
        self.process: subprocess.Popen | None = None

    def command(self) -> list[str]:
        command = ["config.wsgi", "--bind", f"127.0.0.1:{self.port}"]
        if self.config_file:
            command += ["-c", "config/gunicorn.conf.py"]
        else:
            command += ["--worker-tmp-dir", "/dev/shm"]
        if self.workers is not None:
            command += ["--workers", str(self.workers)]
        return [sys.executable, "-m", "gunicorn", *command]

    def __enter__(self) -> "Gunicorn":
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                self.command(),
                cwd=ROOT,
                env=self.environment,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        wait_for(
            self._answers,
            timeout=60,
            what="gunicorn answering /healthz",
            interval=0.1,
            process=self.process,
            log=lambda: self.log_path.read_text(errors="replace")[-3000:],
        )
        return self

    def _answers(self) -> bool:
        host = self.environment["ALLOWED_HOSTS"].split(",")[0]
        return answers(f"{self.base}/healthz", headers={"Host": host})

    def __exit__(self, *exc_info) -> None:
        stop_process(self.process)

    def log_lines(self, *words: str) -> list[str]:
        return [
            line
            for line in self.log_path.read_text(errors="replace").splitlines()
            if any(word in line for word in words)
        ]


class SentryIngest:
    """Records what a Sentry client posts (envelopes), decompressed."""

    def __init__(self):
        self.bodies: list[bytes] = []
        ingest = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                encoding = self.headers.get("Content-Encoding", "")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                elif encoding == "br":
                    import brotli

                    body = brotli.decompress(body)
                ingest.bodies.append(body)
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def dsn(self) -> str:
        return f"http://publickey@127.0.0.1:{self.server.server_address[1]}/1"

    def events(self) -> list[dict]:
        events = []
        for body in self.bodies:
            for line in body.splitlines()[1:]:
                item = json.loads(line) if line.startswith(b"{") else {}
                if "exception" in item:
                    events.append(item)
        return events


class StreamingReplica:
    """A hot standby of the PostgreSQL server on `primary_port` (127.0.0.1, trust auth, as the
    suite's servers are: initdb's pg_hba allows local replication), made with `pg_basebackup -R`
    and started through the one launcher on a port of its own; a context manager that stops it
    and deletes its data. It streams the whole cluster, the suite's test databases included.
    `pause()`/`resume()` stop and restart replay: WAL keeps arriving, the replica falls behind."""

    def __init__(self, primary_port: int):
        self.primary_port = primary_port
        # Under the services' directory (the `postgres` user reaches it), not pytest's private tmp.
        self.dir = Path(tempfile.mkdtemp(dir=os.environ.get("STOREFRONT_TEST_WORKDIR")))
        self.dir.chmod(0o755)
        self.server: PostgresServer | None = None

    def __enter__(self) -> "StreamingReplica":
        data = self.dir / "data"
        data.mkdir(mode=0o700)
        if os.getuid() == 0:
            shutil.chown(data, "postgres", "postgres")
        primary = ("-h", "127.0.0.1", "-p", str(self.primary_port), "-U", "postgres")
        backup = [debian_bin() / "pg_basebackup", *primary, "-D", str(data), "-R", "-X", "stream"]
        subprocess.run([*as_postgres_user(), *backup, "-c", "fast"], check=True, timeout=120)
        # A hot standby refuses to start with fewer connections than its primary allows.
        connections = _query(self.primary_port, "SHOW max_connections")
        self.server = PostgresServer(
            data, debian_bin(), port=free_port(), fsync="off", max_connections=connections
        )
        self.server.start()
        return self

    def __exit__(self, *exc_info) -> None:
        if self.server is not None:
            self.server.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def port(self) -> int:
        return self.server.port

    def execute(self, sql: str) -> str:
        return _query(self.port, sql)

    def pause(self) -> None:
        self.execute("SELECT pg_wal_replay_pause()")
        paused = "SELECT pg_get_wal_replay_pause_state() = 'paused'"
        wait_for(lambda: self.execute(paused) == "True", timeout=30, what="replay paused")

    def resume(self) -> None:
        self.execute("SELECT pg_wal_replay_resume()")

    def catch_up(self) -> None:
        """Returns once the replica has replayed everything the primary has written so far
        (inserted: the suite commits asynchronously, and the WAL writer sends it soon after)."""
        target = _query(self.primary_port, "SELECT pg_current_wal_insert_lsn()")
        replayed = f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn"
        wait_for(lambda: self.execute(replayed) == "True", timeout=30, what=f"replay to {target}")


def _query(port: int, sql: str) -> str:
    """The first value `sql` answers on the server at 127.0.0.1:`port`, as text."""
    dsn = f"host=127.0.0.1 port={port} user=postgres dbname=postgres"
    with psycopg.connect(dsn, autocommit=True) as connection:
        return str(connection.execute(sql).fetchone()[0])
