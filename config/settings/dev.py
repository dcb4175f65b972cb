"""`make run`: base settings on the embedded PostgreSQL (unless DATABASE_URL names a server),
the file cache and the filesystem broker.

Nothing here weakens security: DEBUG, private webhook channels and cookies over plain HTTP
are opt-ins that bin/run-dev sets in the environment (DEBUG, WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS,
SECURE_COOKIES), so choosing these settings alone does not turn them on.
"""

import os

from config.settings.env import VAR_DIR

VAR_DIR.mkdir(parents=True, exist_ok=True)
if "DATABASE_URL" not in os.environ:
    from devtools.postgres_server import database_url

    # Any command in the checkout (shell, dbshell, migrate) reaches `make run`'s database,
    # starting it if needed; processes this one starts inherit the URL.
    os.environ["DATABASE_URL"] = database_url(VAR_DIR / "postgres")

from config.settings.base import *  # noqa: E402, F403

# `make run` seeds its demo user, store and key (stores/management/commands/seed_demo.py).
SEED_DEMO_ALLOWED = True

SILENCED_SYSTEM_CHECKS = [
    # django-axes counts sign-in failures in the file cache here, whose add/incr are not atomic
    # across processes: concurrent guesses may be undercounted by a few. Acceptable for the
    # one-machine demo; production refuses to start without Redis, where they are atomic.
    "axes.W001",
]
