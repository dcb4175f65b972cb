from datetime import timedelta

import factory
from django.db import transaction
from django.utils import timezone

from accounts.abilities import ALL, ROLE_OWNER
from accounts.models import User
from accounts.services import api_key_create
from coupons.models import Coupon
from events.models import Event
from events.partitions import partitions_ensure
from stores.models import Membership, Store
from webhooks.models import WebhookChannel, WebhookSigningSecret


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.PostGenerationMethodCall("set_password", "password")

    @factory.post_generation
    def save_password(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class StoreFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Store

    name = factory.Sequence(lambda n: f"Store {n}")
    slug = factory.Sequence(lambda n: f"store-{n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    store = factory.SubFactory(StoreFactory)
    role = ROLE_OWNER


def make_api_key(user, *, abilities=(ALL,), store_access="all", stores=(), current_store=None):
    """Returns the secret of a new API key (the model keeps only its hash)."""
    _, secret = api_key_create(
        user=user,
        name="test",
        abilities=list(abilities),
        store_access=store_access,
        stores=list(stores),
        current_store=current_store,
    )
    return secret


class CouponFactory(factory.django.DjangoModelFactory):
    """A live AMOUNT coupon written straight to the table (services are tested on their own)."""

    class Meta:
        model = Coupon

    store = factory.SubFactory(StoreFactory)
    code = factory.Sequence(lambda n: f"CODE{n}")
    type = Coupon.TYPE_AMOUNT
    discount = 5
    store_wide = True


# A valid Standard Webhooks secret (whsec_ + base64 of 32 bytes).
TEST_SIGNING_SECRET = "whsec_c2VjcmV0LWZvci10ZXN0cy0wMTIzNDU2Nzg5YWJjZA=="


class WebhookChannelFactory(factory.django.DjangoModelFactory):
    """A channel written straight to the table (the services are tested on their own), with
    a store signing secret when the store has none."""

    class Meta:
        model = WebhookChannel
        skip_postgeneration_save = True

    store = factory.SubFactory(StoreFactory)
    url = "https://hooks.example.com/storefront"
    event_types = factory.LazyFunction(lambda: ["order.completed"])

    @factory.post_generation
    def signing_secret(channel, create, extracted, **kwargs):
        if create:
            WebhookSigningSecret.objects.get_or_create(
                store=channel.store,
                defaults={
                    "secret": extracted or "whsec_" + "c2VjcmV0LWZvci10ZXN0cy0wMTIzNDU2Nzg5YWJjZA=="
                },
            )


def old_events(store, count: int, age_days: int = 31) -> list[Event]:
    """`count` events of `store` older than retention by default (bulk, one transaction)."""
    occurred_at = timezone.now() - timedelta(days=age_days)
    with transaction.atomic():
        # Only today's days and those ahead have partitions (the hourly upkeep's): a past
        # day gets its own here.
        partitions_ensure(occurred_at.date(), occurred_at.date())
        return Event.objects.bulk_create(
            Event(
                store=store,
                type="coupon.updated",
                version=1,
                subject_type="coupon",
                subject_id=str(n),
                data={},
                occurred_at=occurred_at,
            )
            for n in range(count)
        )


def events_age(events, occurred_at) -> None:
    """Moves `events` (a queryset) to `occurred_at` with their webhook deliveries and attempts:
    the day partition of all three is the event's day. Only the suite changes an event's time
    (record sets it once); the day gets its partition first."""
    from webhooks.models import WebhookDelivery, WebhookDeliveryAttempt

    partitions_ensure(occurred_at.date(), occurred_at.date())
    ids = list(events.values_list("id", flat=True))
    with transaction.atomic():
        Event.objects.filter(pk__in=ids).update(occurred_at=occurred_at)
        WebhookDeliveryAttempt.objects.filter(delivery__event_id__in=ids).update(
            delivery_event_occurred_at=occurred_at
        )
        WebhookDelivery.objects.filter(event_id__in=ids).update(event_occurred_at=occurred_at)
