from django.core.management.base import BaseCommand

from core.operations.progress import progress_bar
from events.services import partitions_upkeep


class Command(BaseCommand):
    help = (
        "The journal's upkeep now (the beat task does it hourly): creates the day partitions "
        "ahead and removes the events past the retention window."
    )

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=None)

    def handle(self, *args, batch_size=None, **options):
        with progress_bar(desc="events pruned", unit="event") as bar:
            done = partitions_upkeep(batch_size=batch_size, on_batch=bar.update)
        self.stdout.write(
            self.style.SUCCESS(
                f"Created {done['created']} day partitions. Deleted {done['pruned']} events."
            )
        )
