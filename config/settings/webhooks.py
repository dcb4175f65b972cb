"""Settings of the webhooks area, imported by base.py; read from the environment."""

WEBHOOKS_BEAT_SCHEDULE: dict = {}
