import os

from celery import Celery
from celery.signals import setup_logging, task_postrun, task_prerun, worker_init
from django.db import InterfaceError, OperationalError

# Secure by default, as manage.py and config.wsgi: `make run` chooses the dev settings.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

app = Celery("storefront")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


# A task whose database connection was ended under it (a restart, a failover, a terminated
# session) runs again on a new one, not failed: the postrun handler below drops the broken
# connection (docs/decisions/hardening.md "A PostgreSQL restart costs no read and no task").
# Declared by the tasks that use the database.
DATABASE_RETRY = {
    "autoretry_for": (OperationalError, InterfaceError),
    "max_retries": 5,
    "retry_backoff": 1,  # 1, 2, 4, 8, 16 s (jittered): a restart takes a second or two
    "retry_backoff_max": 30,
}


@task_prerun.connect
@task_postrun.connect
def _close_old_db_connections(**kwargs):
    """Tasks treat DB connections as requests do: reused up to CONN_MAX_AGE, dropped when
    broken (settings CELERY_DB_REUSE_MAX turns off the fixup's close-per-task)."""
    from django.db import close_old_connections

    close_old_connections()


@task_prerun.connect
def _close_db_connections_the_server_ended(**kwargs):
    """As at a request's start: an idle connection the server ended (a restart) is dropped
    before the task uses it, without a round trip (core/database/connections.py)."""
    from core.database.connections import close_connections_the_server_ended

    close_connections_the_server_ended()


@setup_logging.connect
def _logging_from_django_settings(**kwargs):
    """Workers and beat log through settings.LOGGING, as the web processes do: the same format
    (LOG_FORMAT) and the request id of the task (django-guid's Celery integration sets it from
    the task's headers), instead of Celery's own format without it."""
    from logging.config import dictConfig

    from django.conf import settings

    dictConfig(settings.LOGGING)


@worker_init.connect
def _webhooks_workers_enforce_time_limits(sender, **kwargs):
    """A webhooks worker must kill a send at its hard time limit, a margin before its leases run
    out (docs/decisions/webhooks.md "Leases and the hard time limit"): not on a pool without
    hard limits (all but prefork), nor on timings the checks tagged `webhooks` refuse."""
    from celery.concurrency import get_implementation
    from celery.concurrency.prefork import TaskPool
    from django.conf import settings
    from django.core.checks import run_checks

    queue = settings.WEBHOOKS_QUEUE
    if queue not in sender.app.amqp.queues.consume_from:
        return
    if not issubclass(get_implementation(sender.pool_cls), TaskPool):
        raise SystemExit(
            f"refusing to start: this worker consumes the {queue!r} queue, whose tasks need "
            "hard time limits, and only the prefork pool enforces them; start it with "
            "--pool prefork, or without this queue (-Q)"
        )
    errors = [str(message) for message in run_checks(tags=["webhooks"]) if message.is_serious()]
    if errors:
        raise SystemExit("refusing to start: " + "; ".join(errors))
