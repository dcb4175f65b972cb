from django.core.management.base import BaseCommand
from django.db import transaction

from core.database.list_totals import registered


class Command(BaseCommand):
    help = (
        "Recomputes the maintained list totals (coupons live/deleted, webhook deliveries) of "
        "every store, or of one, repairs them and reports the drift found. Needed only after "
        "rows were written with the triggers off (e.g. a restore with "
        'session_replication_role = replica); docs/decisions/coupons.md "List growth".'
    )

    def add_arguments(self, parser):
        parser.add_argument("--store", type=int, default=None, help="only this store id")

    def handle(self, *args, store=None, **options):
        drifted = 0
        for name, totals in registered.items():
            with transaction.atomic():
                drift = totals.recount(store_id=store)
            for entry in drift:
                self.stdout.write(
                    f"{name}: store {entry['store_id']} {entry['counter']} was "
                    f"{entry['stored']}, is {entry['actual']} (repaired)"
                )
            drifted += len(drift)
        message = f"{drifted} drifted totals repaired." if drifted else "No drift."
        self.stdout.write(self.style.SUCCESS(message))
