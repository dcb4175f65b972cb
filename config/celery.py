import os

from celery import Celery
from celery.signals import task_postrun, task_prerun

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
