from django.apps import AppConfig


class OauthCliConfig(AppConfig):
    name = "oauth_cli"
