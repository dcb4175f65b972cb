import pytest
import redis
from django.conf import settings

# Every queue the project's tasks go to (config/settings/health.py) and Celery's default.
BROKER_QUEUES = ("webhooks", "maintenance", "celery")


@pytest.fixture
def broker():
    """The broker's Redis with empty queues (kombu keeps each queue as a list of messages)."""
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete(*BROKER_QUEUES)
    yield client
    client.delete(*BROKER_QUEUES)


@pytest.fixture(autouse=True)
def _fresh_health_checks(settings, monkeypatch):
    """Every probe runs its checks (tests stop and start dependencies between two probes), and
    each test starts with no check known to be failing; tests that poll /status until a worker
    answers are not stopped by the probe limit. Tests of the shared results and of the limit
    set their setting themselves."""
    from config import health

    settings.HEALTH_CHECK_RESULT_SECONDS = 0
    settings.HEALTH_RATE_LIMIT_PER_MINUTE = 1_000_000
    monkeypatch.setattr(health, "_runs", {})
    monkeypatch.setattr(health, "_failing", {})
