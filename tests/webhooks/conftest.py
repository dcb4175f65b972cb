"""Fixtures of the webhooks tests alone (the receiver and the worker, which other areas use too, are
in tests/conftest.py)."""

import pytest

from tests.webhooks.dns import UnresponsiveNameServer


@pytest.fixture
def unresponsive_name_server(monkeypatch):
    """tests.webhooks.dns.UnresponsiveNameServer, answered and closed after the test."""
    server = UnresponsiveNameServer(monkeypatch)
    yield server
    server.close()


@pytest.fixture
def quick_schedule(settings):
    """Every retry due at once and a one-second send timeout: a test sends a delivery's attempts
    one after the other, in its own process, without waiting for the schedule."""
    settings.WEBHOOKS_RETRY_SCHEDULE_SECONDS = (0, 0, 0)
    settings.WEBHOOKS_TIMEOUT_SECONDS = 1


@pytest.fixture
def empty_queue(quick_schedule):
    """quick_schedule, and the broker's queue emptied before and after: the drains a test
    queues are the ones it counts, and none is left to the next test."""
    from config.celery import app

    app.control.purge()
    yield
    app.control.purge()


@pytest.fixture
def production(settings):
    """Destinations checked as in production: private and reserved addresses refused."""
    settings.WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS = False
