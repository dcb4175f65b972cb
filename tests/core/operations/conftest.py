import ipaddress

import pytest
import redis
from django.conf import settings
from django.test import Client

from tests.core.operations.metrics import SCRAPER_ADDRESS

# Every queue the project's tasks go to (config/settings/health.py) and Celery's default.
BROKER_QUEUES = ("webhooks", "maintenance", "celery")


@pytest.fixture
def broker():
    """The broker's Redis with empty queues (kombu keeps each queue as a list of messages)."""
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete(*BROKER_QUEUES)
    yield client
    client.delete(*BROKER_QUEUES)


@pytest.fixture
def scraper(settings):
    """A client of /metrics on the allow-list."""
    settings.METRICS_ALLOWED_NETWORKS = (ipaddress.ip_network(SCRAPER_ADDRESS),)
    return Client()
