from django.apps import AppConfig


class OauthCliConfig(AppConfig):
    name = "oauth_cli"

    def ready(self):
        from oauth_cli import checks  # noqa: F401  (registers the system checks)
