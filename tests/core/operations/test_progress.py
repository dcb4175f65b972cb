"""Long management commands show a tqdm bar on a terminal and stay quiet in logs and cron."""

import fcntl
import io
import os
import pty
import select
import struct
import sys
import termios

import pytest
from django.core.management import call_command

from tests.factories import old_events


@pytest.fixture
def terminal():
    """A pseudo-terminal: (the stream writing to it, a function reading what was written)."""
    controller, terminal = pty.openpty()
    # 24 rows x 80 columns, as a terminal has (a new pty is 0 x 0: a bar of no width).
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    stream = os.fdopen(terminal, "w")

    def written() -> str:
        stream.flush()
        chunks = []
        # The pty hands written bytes over in chunks: read until it has been quiet a while.
        while select.select([controller], [], [], 0.5)[0]:
            chunks.append(os.read(controller, 65536))
        return b"".join(chunks).decode(errors="replace")

    yield stream, written
    stream.close()
    os.close(controller)


def _commands(store) -> dict[str, tuple]:
    """Each command and the description its bar starts with."""
    return {
        "simulate_orders": (
            ("simulate_orders", "--store", store.slug, "--count", "3"),
            f"orders in {store.slug}: 100%",
        ),
        "prune_events": (("prune_events", "--batch-size", "2"), "events pruned: 3event"),
        "oauth_prune": (("oauth_prune",), "expired token families: 0family"),
    }


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["simulate_orders", "prune_events", "oauth_prune"])
def test_a_terminal_gets_a_progress_bar(store, terminal, monkeypatch, name):
    old_events(store, 3)
    stream, written = terminal
    # In the test body: pytest's output capture puts its own sys.stderr back after setup.
    monkeypatch.setattr(sys, "stderr", stream)
    arguments, bar = _commands(store)[name]
    call_command(*arguments, stdout=io.StringIO())
    assert bar in written()


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["simulate_orders", "prune_events", "oauth_prune"])
def test_without_a_terminal_nothing_but_the_result_is_written(store, monkeypatch, name):
    old_events(store, 3)
    captured = io.StringIO()  # not a TTY: a log file, cron, a pipe
    monkeypatch.setattr(sys, "stderr", captured)
    out = io.StringIO()
    arguments, bar = _commands(store)[name]
    call_command(*arguments, stdout=out)
    assert captured.getvalue() == ""
    assert out.getvalue()  # the result line
    assert bar.split(":")[0] not in out.getvalue()
