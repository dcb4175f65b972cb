from datetime import UTC, timedelta

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from accounts.abilities import ALL
from accounts.models import ApiKey, User
from accounts.services import api_key_create
from core.api.errors import ValidationFailed
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
        expiry = parser.add_mutually_exclusive_group()
        expiry.add_argument(
            "--expires-at",
            default="",
            help="ISO 8601 time the key stops working, e.g. 2027-01-31T00:00:00Z "
            "(no offset: UTC); default: never",
        )
        expiry.add_argument(
            "--expires-in-days", type=int, default=None, help="the key stops working after N days"
        )

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
        expires_at = self._expires_at(options)
        try:
            _, secret = api_key_create(
                user=user,
                name=options["name"],
                abilities=[a for a in options["abilities"].split(",") if a],
                store_access=ApiKey.STORE_ACCESS_SELECTED if stores else ApiKey.STORE_ACCESS_ALL,
                stores=stores,
                current_store=current,
                expires_at=expires_at,
            )
        except ValidationFailed as error:
            raise CommandError(error.message) from None
        self.stdout.write(secret)

    def _expires_at(self, options):
        if options["expires_in_days"] is not None:
            if options["expires_in_days"] < 1:
                raise CommandError("--expires-in-days must be at least 1")
            return timezone.now() + timedelta(days=options["expires_in_days"])
        if not options["expires_at"]:
            return None
        try:
            expires_at = parse_datetime(options["expires_at"])
        except ValueError:
            expires_at = None
        if expires_at is None:
            raise CommandError("--expires-at must be an ISO 8601 date and time")
        if timezone.is_naive(expires_at):
            expires_at = expires_at.replace(tzinfo=UTC)
        return expires_at
