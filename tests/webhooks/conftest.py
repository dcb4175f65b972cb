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
