"""The checks behind /readyz and /status, each bounded in time (docs/decisions/health.md
"Bounded time").

A check returns a small dict with `status` "ok" or the reason it fails; a dependency that does
not answer raises CheckUnavailable. Causes go to the log, not to the unauthenticated response,
and only when a check changes state. A check's run serves every probe of the next
HEALTH_CHECK_RESULT_SECONDS (per process).
"""

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor

from core.database.connections import connecting_without_waiting
from core.database.replica import ReplicaUnavailable, replica_configured, replica_state
from core.operations.beat import beat_heartbeat_last
from core.operations.worker_heartbeat import worker_heartbeat_last

logger = logging.getLogger(__name__)

OK = "ok"
# A heartbeat never seen, while this process is younger than the heartbeat's allowed silence:
# a fresh start (`make run`, a deploy), not a failure (docs/decisions/health.md "Starting").
STARTING = "starting"
PASSING = {OK, STARTING}
# "Start": when this process first loaded the checks (a web worker's first request).
started_at = time.time()

# Checks run here, never in the request thread, so a dependency that hangs costs the probe
# HEALTH_CHECK_TIMEOUT_SECONDS and no more. A hung check keeps its thread until its driver
# gives up; once all are stuck, further checks wait in the queue and report `timeout`.
_executor = ThreadPoolExecutor(max_workers=8, thread_name_prefix="health-check")


def _using_database(check):
    """Runs on a pool thread: Django opens that thread's own connection, closed afterwards so
    no probe leaves one open (CONN_MAX_AGE does not apply outside a request). A database that
    refuses it is reported at once, not waited for as requests wait
    (core/database/connections.py)."""

    def run():
        try:
            with connecting_without_waiting():
                return check()
        finally:
            connections.close_all()

    return run


class CheckUnavailable(Exception):
    """The dependency did not answer (reported as `unavailable`; its cause is logged)."""


def database_check() -> dict:
    connection = connections[DEFAULT_DB_ALIAS]
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as error:
        raise CheckUnavailable("database") from error
    # What `migrate --check` compares: the code's migrations against django_migrations.
    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if pending:
        return {"status": "migrations_pending", "pending": len(pending)}
    return {"status": OK}


def cache_check() -> dict:
    try:
        cache.set("health:probe", "ok", timeout=10)
        if cache.get("health:probe") == "ok":
            return {"status": OK}
    except Exception as error:
        raise CheckUnavailable("cache") from error
    return {"status": "unavailable"}


def broker_check() -> dict:
    """A round trip on a connection of the app's broker pool, the one task publishing uses:
    no new broker connection per probe (a broken one is reconnected by its next user). The app
    is Celery's current one, which config.celery makes in every process: the shared layer does
    not import the configuration."""
    app = current_app
    timeout = settings.HEALTH_CHECK_TIMEOUT_SECONDS
    try:
        with app.pool.acquire(block=True, timeout=timeout) as connection:
            connection.ensure_connection(max_retries=1, timeout=timeout)
            # Redis connects lazily: a round trip proves the broker answers.
            channel = connection.default_channel
            client = getattr(channel, "client", None)
            if client is not None and hasattr(client, "ping"):
                client.ping()
    except Exception as error:
        raise CheckUnavailable("broker") from error
    return {"status": OK}


def _heartbeat_result(last, *, stale_after: float) -> dict:
    """A heartbeat recorded at Unix time `last` (None: never), stale after that many seconds."""
    if last is None:
        starting = time.time() - started_at <= stale_after
        return {"status": STARTING if starting else "never_seen", "seconds_since_heartbeat": None}
    silent = max(0.0, time.time() - float(last))
    return {
        "status": OK if silent <= stale_after else "stale",
        "seconds_since_heartbeat": round(silent, 1),
    }


def beat_check() -> dict:
    return _heartbeat_result(beat_heartbeat_last(), stale_after=2 * settings.BEAT_HEARTBEAT_SECONDS)


def worker_check(queue: str):
    """The heartbeat of whichever worker consumes `queue` (beat sends one each interval)."""

    def check() -> dict:
        # Two intervals, as for beat, plus one beat tick: the heartbeat is sent by beat, whose
        # own delays (a lock renewal, a standby taking over) are reported as beat's.
        stale_after = 2 * settings.WORKER_HEARTBEAT_SECONDS + settings.BEAT_HEARTBEAT_SECONDS
        return _heartbeat_result(worker_heartbeat_last(queue), stale_after=stale_after)

    return check


_replica_down = threading.Event()


def replica_check() -> dict:
    """The read replica's state, shown and never failing: reads go to the primary while it is
    down or too far behind (core/database/replica.py), so the web is still ready."""
    try:
        state = replica_state()
    except ReplicaUnavailable as error:
        # Logged when it stops answering, as a failing check is (_log_state_change).
        if not _replica_down.is_set():
            logger.warning("health: replica unavailable: %s", error)
        _replica_down.set()
        return {"status": OK, "replica": "unavailable", "lag_seconds": None}
    _replica_down.clear()
    return {
        "status": OK,
        "replica": "streaming" if state.usable else "behind",
        "lag_seconds": None if state.lag_seconds is None else round(state.lag_seconds, 1),
        "max_lag_seconds": settings.DATABASE_REPLICA_MAX_LAG_SECONDS,
    }


READINESS_CHECKS = {
    "database": _using_database(database_check),
    "cache": cache_check,
    "broker": broker_check,
}
if replica_configured():
    READINESS_CHECKS["replica"] = _using_database(replica_check)
STATUS_CHECKS = {
    **READINESS_CHECKS,
    "beat": beat_check,
    **{f"worker_{queue}": worker_check(queue) for queue in settings.WORKER_HEARTBEAT_QUEUES},
}


def development_opt_ins_check() -> dict:
    """Passes (they are allowed), and names each development opt-in production runs with."""
    return {"status": OK, "enabled": list(settings.DEVELOPMENT_OPT_INS)}


if settings.DEVELOPMENT_OPT_INS:
    STATUS_CHECKS["development_opt_ins"] = development_opt_ins_check


def status_check_add(name: str, check) -> None:
    """A /status check reading the database, added in an AppConfig.ready (config imports no app)."""
    STATUS_CHECKS[name] = _using_database(check)


@dataclass(frozen=True)
class _Run:
    started: float
    future: Future


_runs: dict[str, _Run] = {}
_failing: dict[str, bool] = {}
_lock = threading.Lock()


def _run(name: str, check) -> Future:
    """The run of `check` started within the last HEALTH_CHECK_RESULT_SECONDS, else a new one
    (a run still going, shared by the probes that arrive meanwhile, counts too)."""
    now = time.monotonic()
    with _lock:
        run = _runs.get(name)
        if run is None or now - run.started >= settings.HEALTH_CHECK_RESULT_SECONDS:
            run = _runs[name] = _Run(now, _executor.submit(check))
    return run.future


def run_checks(checks: dict) -> tuple[bool, dict]:
    """Runs the checks in parallel; returns whether all passed, and each one's result."""
    futures = {name: _run(name, check) for name, check in checks.items()}
    wait(futures.values(), timeout=settings.HEALTH_CHECK_TIMEOUT_SECONDS)
    results = {}
    for name, future in futures.items():
        cause = None
        if not future.done() or future.cancelled():
            future.cancel()  # still queued: never starts; already running: left to finish
            results[name] = {"status": "timeout"}
        elif future.exception() is not None:
            cause = future.exception()
            unavailable = isinstance(cause, CheckUnavailable)
            results[name] = {"status": "unavailable" if unavailable else "error"}
            cause = cause.__cause__ if unavailable and cause.__cause__ else cause
        else:
            results[name] = future.result()
        _log_state_change(name, results[name], cause)
    return all(result["status"] in PASSING for result in results.values()), results


def _log_state_change(name: str, result: dict, cause: BaseException | None) -> None:
    failing = result["status"] not in PASSING
    with _lock:
        was_failing = _failing.get(name, False)
        _failing[name] = failing
    if failing and not was_failing:
        logger.error("health: %s check failing: %s", name, result, exc_info=cause)
    elif was_failing and not failing:
        logger.info("health: %s check ok again", name)


class HealthCollector:
    """/status as gauges, for alerts (deploy/alerts.yml): one run of the checks per scrape,
    the same bounded run a probe gets (shared with the probes of the same interval)."""

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        _, results = run_checks(STATUS_CHECKS)
        passing = GaugeMetricFamily(
            "storefront_health_check_passing",
            "1 when the /status check passes (ok, or starting), else 0.",
            labels=["check"],
        )
        silence = GaugeMetricFamily(
            "storefront_heartbeat_age_seconds",
            "Seconds since beat's or a queue's worker heartbeat (absent: never seen).",
            labels=["check"],
        )
        for name, result in results.items():
            passing.add_metric([name], 1 if result["status"] in PASSING else 0)
            if result.get("seconds_since_heartbeat") is not None:
                silence.add_metric([name], result["seconds_since_heartbeat"])
        yield passing
        yield silence
