"""gunicorn's settings for production: the image links this file as /app/gunicorn.conf.py, which
gunicorn reads from its working directory, so any gunicorn command run in the image starts with
them; docs/production.md's command names it (`-c config/gunicorn.conf.py`). A command-line
setting still wins. Workers: WEB_CONCURRENCY (read by gunicorn itself). No access log: the app
logs one line per request with its request id.
"""

import os

from config.settings.env import env

bind = "0.0.0.0:8000"
# Threads, so that a request waiting on another server (a webhook receiver's answer to a test send,
# a name server) holds one thread of its process, not the process: the waits are bounded in number
# below the threads (WEBHOOKS_OUTBOUND_CALLS_PER_PROCESS, webhooks/dispatch/outbound.py) and every
# other request finds a free one.
worker_class = "gthread"
threads = env.count("WEB_THREADS", default=8, minimum=1)
# Heartbeat files in memory, not on a possibly slow container filesystem.
worker_tmp_dir = "/dev/shm"  # noqa: S108  (gunicorn writes only its heartbeat files there)
# The control socket (`gunicornc`) in the processes' writable directory (STOREFRONT_VAR_DIR,
# /var/lib/storefront in the image). gunicorn's default is under $HOME (/app, read-only to the
# processes): every start then logged `ERROR Control server error`.
control_socket = os.path.join(
    os.environ.get("STOREFRONT_VAR_DIR", "/var/lib/storefront"), "gunicorn.ctl"
)
