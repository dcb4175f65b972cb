"""gunicorn's settings for the production image (linked as /app/gunicorn.conf.py, which gunicorn
reads from its working directory, so any gunicorn command run in the image starts with them; a
command-line setting still wins). Workers: WEB_CONCURRENCY. No access log: the app logs one
line per request with its request id.
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
