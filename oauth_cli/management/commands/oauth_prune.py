from django.core.management.base import BaseCommand

from oauth_cli.services import oauth_prune


class Command(BaseCommand):
    help = "Deletes expired authorization codes, tokens and token-family records."

    def handle(self, *args, **options):
        # DOT's own cleartokens (clear_expired) does the codes and tokens; we add families.
        deleted = oauth_prune()
        self.stdout.write(f"Pruned expired codes and tokens; {deleted} token families removed.")
