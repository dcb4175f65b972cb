"""Fixtures of the webhooks tests alone (the receiver and the worker, which other areas use too, are
in tests/conftest.py)."""

import pytest

from tests.webhooks.dns import UnresponsiveNameServer
from webhooks import transport
from webhooks.leases import keeper


@pytest.fixture(autouse=True)
def leases_forgotten():
    """A test that claims and never records (a worker that died) leaves no lease renewed into
    the next test."""
    yield
    keeper.forget_all()


@pytest.fixture(scope="session", autouse=True)
def leases_thread_idle(django_db_setup):
    """The lease keeper's connection is closed before the test database is dropped."""
    yield
    assert keeper.forget_all(wait=10)


@pytest.fixture(autouse=True)
def checked_answers_forgotten():
    """Each test's names resolve as its own FakeDns says, not as an earlier test's answer the
    sender still remembers (webhooks/transport.py CHECKED_ANSWER_SECONDS)."""
    transport.session_reset()
    yield
    transport.session_reset()


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
