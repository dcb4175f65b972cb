from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"

    def ready(self):
        from accounts import schema  # noqa: F401  registers the OpenAPI auth extension
        from accounts.identity import connect_receivers

        connect_receivers()
