"""Settings of the oauth area, imported by base.py; read from the environment."""

OAUTH_BEAT_SCHEDULE: dict = {}
