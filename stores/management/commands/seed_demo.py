from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from accounts.abilities import ALL, ROLE_OWNER
from accounts.models import ApiKey, User
from accounts.services import api_key_create, api_key_revoke
from stores.models import Membership, Store

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "demo"
DEMO_STORE_SLUG = "demo-store"
DEMO_KEY_NAME = "demo"


class Command(BaseCommand):
    help = (
        "Seeds a demo user, store and API key (the key is new on every run and printed; "
        "the previous demo key is revoked)."
    )

    def handle(self, *args, **options):
        if not settings.SEED_DEMO_ALLOWED:
            # A superuser with a known password must never reach a shared database.
            raise CommandError(
                "seed_demo creates a superuser whose password is 'demo'; it runs only under "
                "the development settings (make run: DJANGO_SETTINGS_MODULE=config.settings.dev)."
            )
        with transaction.atomic():
            user, created = User.objects.get_or_create(
                username=DEMO_USERNAME,
                defaults={"email": "demo@example.com", "is_staff": True, "is_superuser": True},
            )
            if created:
                user.set_password(DEMO_PASSWORD)
                user.save()
            # Made by the seeding, not by the demo user's request: no creator, so the demo
            # user's first POST /api/v2/stores is not held by the one-store-per-interval limit.
            store, _ = Store.objects.get_or_create(
                slug=DEMO_STORE_SLUG, defaults={"name": "Demo Store", "created_by": None}
            )
            Membership.objects.get_or_create(user=user, store=store, defaults={"role": ROLE_OWNER})
            previous = list(
                ApiKey.objects.filter(user=user, name=DEMO_KEY_NAME, revoked_at__isnull=True)
            )
            for old in previous:
                api_key_revoke(api_key=old)
            _, secret = api_key_create(
                user=user, name=DEMO_KEY_NAME, abilities=[ALL], current_store=store
            )
        base = settings.BASE_URL
        self.stdout.write(self.style.SUCCESS("Demo data ready."))
        self.stdout.write(
            f"  console: {base}/console/  (sign in as {DEMO_USERNAME}, password {DEMO_PASSWORD})"
        )
        self.stdout.write(
            f"  admin:   {base}/admin/  (user {DEMO_USERNAME}, password {DEMO_PASSWORD})"
        )
        self.stdout.write(f"  store:   {DEMO_STORE_SLUG}")
        self.stdout.write(f"  API key: {secret}")
        for old in previous:
            self.stdout.write(
                f"           (the previous demo key {old.prefix}... is revoked: use this one)"
            )
        self.stdout.write(
            f"  try:     curl -s -H 'Authorization: Bearer {secret}' {base}/api/v2/me"
        )
