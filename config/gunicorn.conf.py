"""gunicorn's settings for the production image: the image links it as /app/gunicorn.conf.py,
the file gunicorn reads from its working directory by default, so the image's command and any
other gunicorn command run in the image (an operator's own bind, workers or timeout) start
with these. A setting given on a command line still wins over this file.

Workers: WEB_CONCURRENCY (gunicorn reads it itself; about 2 per core). No access log: the app
logs one line per request (logger storefront.requests) with its request id.
"""

import os

bind = "0.0.0.0:8000"
# Heartbeat files in memory, not on a possibly slow container filesystem.
worker_tmp_dir = "/dev/shm"  # noqa: S108  (gunicorn writes only its heartbeat files there)
# The control socket (`gunicornc`) in the processes' writable directory (STOREFRONT_VAR_DIR,
# /var/lib/storefront in the image). gunicorn's default is under $HOME (/app, read-only to the
# processes): every start then logged `ERROR Control server error`.
control_socket = os.path.join(
    os.environ.get("STOREFRONT_VAR_DIR", "/var/lib/storefront"), "gunicorn.ctl"
)
