from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand
from django.utils import timezone

from core.operations.progress import progress_bar
from events.partitions import partitions_ensure
from events.services import events_prune


class Command(BaseCommand):
    help = (
        "The journal's upkeep now (the beat task does it hourly): creates the day partitions "
        "ahead and removes the events past the retention window."
    )

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=None)

    def handle(self, *args, batch_size=None, **options):
        today = timezone.now().date()
        created = partitions_ensure(today, today + timedelta(days=settings.EVENTS_PARTITIONS_AHEAD))
        with progress_bar(desc="events pruned", unit="event") as bar:
            deleted = events_prune(batch_size=batch_size, on_batch=bar.update)
        self.stdout.write(
            self.style.SUCCESS(f"Created {created} day partitions. Deleted {deleted} events.")
        )
