from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """The console: server-rendered pages where a member manages what the API offers."""

    name = "console"
