"""Progress bars for long management commands (tqdm)."""

import sys

from tqdm import tqdm


def progress_bar(*, desc: str, total: int | None = None, unit: str = "it", stream=None) -> tqdm:
    """A bar on a terminal, nothing in logs or cron: tqdm's `disable=None` turns it off when
    the stream (stderr, so stdout stays the command's result) is not a TTY."""
    return tqdm(
        total=total, desc=desc, unit=unit, file=stream or sys.stderr, disable=None, leave=True
    )
