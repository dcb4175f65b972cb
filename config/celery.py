import os

from celery import Celery
from celery.signals import setup_logging, task_postrun, task_prerun

# Secure by default, as manage.py and config.wsgi: `make run` chooses the dev settings.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

app = Celery("storefront")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def _close_old_db_connections(**kwargs):
    """Tasks treat DB connections as requests do: reused up to CONN_MAX_AGE, dropped when
    broken (settings CELERY_DB_REUSE_MAX turns off the fixup's close-per-task)."""
    from django.db import close_old_connections

    close_old_connections()


@setup_logging.connect
def _logging_from_django_settings(**kwargs):
    """Workers and beat log through settings.LOGGING, as the web processes do: the same format
    (LOG_FORMAT) and the request id of the task (django-guid's Celery integration sets it from
    the task's headers), instead of Celery's own format without it."""
    from logging.config import dictConfig

    from django.conf import settings

    dictConfig(settings.LOGGING)
