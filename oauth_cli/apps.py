from django.apps import AppConfig


class OauthCliConfig(AppConfig):
    name = "oauth_cli"
    verbose_name = "Command-line client (OAuth)"

    def ready(self):
        # Imported for their registrations: the system checks, the sign-in receiver.
        from oauth_cli import checks, login_limits  # noqa: F401
