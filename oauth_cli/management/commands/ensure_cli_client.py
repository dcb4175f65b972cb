from django.conf import settings
from django.core.management.base import BaseCommand

from oauth_cli.services import CLI_REDIRECT_URIS, cli_application_ensure


class Command(BaseCommand):
    help = "Creates or repairs the one OAuth client, the official CLI (idempotent)."

    def handle(self, *args, **options):
        application = cli_application_ensure()
        self.stdout.write(
            f"CLI client {application.client_id} (public, authorization code + PKCE S256), "
            f"redirect URIs {' '.join(CLI_REDIRECT_URIS)} on any port; issuer {settings.BASE_URL}"
        )
