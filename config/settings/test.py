import importlib.util
import os
import tempfile

# The suite runs on real PostgreSQL and Redis (bin/with-test-services starts both).
if not os.environ.get("DATABASE_URL") or not os.environ.get("REDIS_URL"):
    raise RuntimeError(
        "The suite runs on real PostgreSQL and Redis: use `make test` (it starts both), "
        "or export DATABASE_URL=postgres://... and REDIS_URL=redis://..."
    )

# Per pytest-xdist worker gwN (gw0 without xdist; set again in each worker, which inherits the
# main process's environment), inherited by the processes its tests start: the cache and the
# broker in Redis databases of their own (2N+1, 2N+2: docs/decisions/suite.md "Running in
# parallel"), and a metrics directory (base.py's default is the repository's var/).
_worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
if os.environ.get("STOREFRONT_TEST_WORKER") != _worker:
    _n, _redis = int(_worker[2:]), os.environ["REDIS_URL"].rsplit("/", 1)[0]
    os.environ.update(
        REDIS_URL=f"{_redis}/{2 * _n + 2}",
        STOREFRONT_TEST_CACHE_URL=f"{_redis}/{2 * _n + 1}",
        PROMETHEUS_MULTIPROC_DIR=tempfile.mkdtemp(dir=os.environ.get("STOREFRONT_TEST_WORKDIR")),
        STOREFRONT_TEST_WORKER=_worker,
    )

from config.settings.base import *  # noqa: E402, F403
from config.settings.base import CACHES, CELERY_BEAT_SCHEDULE, DATABASES  # noqa: E402
from config.settings.health import worker_heartbeat_schedule  # noqa: E402

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
SEED_DEMO_ALLOWED = True
WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS = True
# Each test starts with no state a webhook send left in its process: every name is looked up as
# the test's own resolver says, and a broker failure pauses nothing. The tests of the answer's
# reuse and of the pause set these themselves.
WEBHOOKS_CHECKED_ANSWER_SECONDS = 0
WEBHOOKS_BROKER_OUTAGE_PAUSE_SECONDS = 0
# Fixed, not from the environment: a BASE_URL exported for curl must not change test URLs.
BASE_URL = "http://testserver"
OAUTH2_PROVIDER = {**OAUTH2_PROVIDER, "OIDC_ISS_ENDPOINT": BASE_URL}  # noqa: F405
DATABASES["default"]["CONN_MAX_AGE"] = 0
CACHES["default"]["LOCATION"] = os.environ["STOREFRONT_TEST_CACHE_URL"]
# APIClient sends JSON unless a test says otherwise (the API accepts nothing else).
REST_FRAMEWORK = {**REST_FRAMEWORK, "TEST_REQUEST_DEFAULT_FORMAT": "json"}  # noqa: F405
# The live server of the end-to-end tests speaks plain HTTP, where clients drop Secure cookies.
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
# The workers of the webhooks tests run beat (-B) and are killed with -9 and restarted: the
# new beat must take the scheduling lock within seconds, not after a production-length TTL.
BEAT_HEARTBEAT_SECONDS = 0.5
BEAT_LOCK_SECONDS = 2
# Workers started by the suite (with -B) record their heartbeats within a second.
WORKER_HEARTBEAT_SECONDS = 0.5
CELERY_BEAT_SCHEDULE = {
    **CELERY_BEAT_SCHEDULE,
    **worker_heartbeat_schedule(WORKER_HEARTBEAT_SECONDS),
}
# Today and tomorrow, not production's week ahead: every test's flush truncates each
# partition, and every journal and delivery query plans them all (docs/decisions/suite.md "The
# journal's days in the suite").
EVENTS_PARTITIONS_AHEAD = 1
# Test-only management commands (tests/harness: flush retried when it loses a deadlock to a
# running Celery worker), from a checkout: the wheel's packaging test uses these settings
# without the tests.
try:
    _harness = importlib.util.find_spec("tests.harness")
except ModuleNotFoundError:  # no `tests` package at all
    _harness = None
if _harness is not None:
    INSTALLED_APPS = ["tests.harness", *INSTALLED_APPS]  # noqa: F405
