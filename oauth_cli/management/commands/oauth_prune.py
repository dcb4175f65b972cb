from django.core.management.base import BaseCommand

from core.operations.progress import progress_bar
from oauth_cli.services import oauth_prune


class Command(BaseCommand):
    help = "Deletes expired authorization codes, tokens and token-family records."

    def handle(self, *args, **options):
        # DOT's own cleartokens (clear_expired) does the codes and tokens; we add families.
        with progress_bar(desc="expired token families", unit="family") as bar:
            deleted = oauth_prune(on_family=bar.update)
        self.stdout.write(f"Pruned expired codes and tokens; {deleted} token families removed.")
