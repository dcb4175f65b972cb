"""The instants tests freeze clocks at (tests/conftest.py's autouse fixtures)."""

# 30 s into a one-minute window (1_800_000_000 is a multiple of 60).
FROZEN_RATE_LIMIT_NOW = 1_800_000_030.0
