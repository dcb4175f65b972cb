"""The instants tests freeze clocks at (tests/conftest.py's fixtures)."""

# 30 s into a one-minute window (1_800_000_000 is a multiple of 60).
FROZEN_RATE_LIMIT_NOW = 1_800_000_030.0


def next_window_middle(now: float) -> float:
    """30 s into the rate-limit window (a minute) after the one `now` is in."""
    return (now // 60 + 1) * 60 + 30
