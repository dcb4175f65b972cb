"""Fixtures of the webhooks tests alone (the receiver and the worker, which other areas use too, are
in tests/conftest.py)."""

import pytest

from tests.webhooks.dns import UnresponsiveNameServer
from webhooks.dispatch import transport


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
