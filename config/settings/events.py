"""Settings of the events area, imported by base.py; read from the environment."""

EVENTS_BEAT_SCHEDULE: dict = {}
