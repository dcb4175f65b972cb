from django.core.management.base import BaseCommand

from config.progress import progress_bar
from events.services import events_prune


class Command(BaseCommand):
    help = "Deletes events older than the retention window now (the beat task does it hourly)."

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=None)

    def handle(self, *args, batch_size=None, **options):
        with progress_bar(desc="events pruned", unit="event") as bar:
            deleted = events_prune(batch_size=batch_size, on_batch=bar.update)
        self.stdout.write(self.style.SUCCESS(f"Deleted {deleted} events."))
