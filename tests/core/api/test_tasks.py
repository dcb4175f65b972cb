"""The shared Celery task: expired idempotency keys are pruned on beat's schedule."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from config.celery import app
from core.api.models import IdempotencyKey
from core.api.tasks import idempotency_keys_prune_task

pytestmark = pytest.mark.django_db


def test_prune_task_is_registered_and_scheduled():
    assert "api.idempotency_keys_prune" in app.tasks
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "api.idempotency_keys_prune" in scheduled


def test_prune_task_deletes_expired_keys(user):
    IdempotencyKey.objects.create(
        user=user,
        operation="stores.create",
        key="old",
        fingerprint="f",
        created_at=timezone.now() - timedelta(hours=25),
    )
    # called in process: `.apply()` would let Celery close the test transaction's connection
    idempotency_keys_prune_task()
    assert not IdempotencyKey.objects.exists()
