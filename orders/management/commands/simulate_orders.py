import random

from django.core.management.base import BaseCommand, CommandError

from core.api.errors import ApiError
from core.operations.progress import progress_bar
from orders.services import order_complete, order_place
from stores.models import Store


class Command(BaseCommand):
    help = (
        "Places and completes N orders in a store (demos and load); each completion records "
        "order.completed in its own transaction."
    )

    def add_arguments(self, parser):
        parser.add_argument("--store", required=True, help="store slug")
        parser.add_argument("--count", type=int, required=True)
        parser.add_argument("--coupon", default=None, help="coupon code to apply to each order")
        parser.add_argument("--currency", default="USD")
        parser.add_argument(
            "--pending", type=float, default=0.0, help="share of orders left pending (0..1)"
        )
        parser.add_argument("--seed", type=int, default=None)

    def handle(self, *args, store, count, coupon, currency, pending, seed, **options):
        if count < 1:
            raise CommandError("--count must be at least 1")
        if not 0.0 <= pending <= 1.0:
            raise CommandError("--pending must be between 0 and 1")
        target = Store.objects.filter(slug=store).first()
        if target is None:
            raise CommandError(f"no store with slug {store!r}")
        rng = random.Random(seed)
        placed = completed = refused = 0
        bar = progress_bar(desc=f"orders in {target.slug}", total=count, unit="order")
        for _ in range(count):
            try:
                order = order_place(
                    store=target,
                    subtotal_cents=rng.randint(500, 50_000),
                    currency=currency,
                    coupon_code=coupon,
                )
            except ApiError as error:
                refused += 1
                if bar.disable:
                    self.stderr.write(f"order refused: {error.message}")
                else:  # above the bar, which redraws below
                    bar.write(f"order refused: {error.message}")
            else:
                placed += 1
                if rng.random() >= pending:
                    order_complete(order=order)
                    completed += 1
            bar.update()
        bar.close()
        self.stdout.write(
            self.style.SUCCESS(
                f"{placed} orders placed in {target.slug}, {completed} completed, "
                f"{refused} refused."
            )
        )
