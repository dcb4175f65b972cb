import sys

import pytest
from django.core.signals import got_request_exception


@pytest.fixture
def signalled():
    """The requests got_request_exception was sent for (what error trackers listen to)."""
    received = []

    def receiver(sender, request, **kwargs):
        received.append((request, sys.exc_info()[1]))

    got_request_exception.connect(receiver)
    yield received
    got_request_exception.disconnect(receiver)
