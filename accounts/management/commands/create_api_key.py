from django.core.management.base import BaseCommand, CommandError

from accounts.abilities import ALL
from accounts.models import ApiKey, User
from accounts.services import api_key_create
from config.api.errors import ValidationFailed
from stores.models import Store


class Command(BaseCommand):
    help = "Creates an API key for a user and prints its secret once."

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True, help="username")
        parser.add_argument("--name", default="cli")
        parser.add_argument(
            "--abilities",
            default=ALL,
            help="comma-separated, e.g. account:read,coupon,invoice (default *)",
        )
        parser.add_argument(
            "--stores", default="", help="comma-separated store slugs: restrict the key to them"
        )
        parser.add_argument("--current-store", default="", help="store slug")

    def handle(self, *args, **options):
        try:
            user = User.objects.get(username=options["user"])
        except User.DoesNotExist:
            raise CommandError(f"no user {options['user']!r}") from None
        slugs = [s for s in options["stores"].split(",") if s]
        stores = list(Store.objects.filter(slug__in=slugs))
        if len(stores) != len(slugs):
            raise CommandError("unknown store slug in --stores")
        current = None
        if options["current_store"]:
            current = Store.objects.filter(slug=options["current_store"]).first()
            if current is None:
                raise CommandError("unknown --current-store")
        try:
            _, secret = api_key_create(
                user=user,
                name=options["name"],
                abilities=[a for a in options["abilities"].split(",") if a],
                store_access=ApiKey.STORE_ACCESS_SELECTED if stores else ApiKey.STORE_ACCESS_ALL,
                stores=stores,
                current_store=current,
            )
        except ValidationFailed as error:
            raise CommandError(error.message) from None
        self.stdout.write(secret)
