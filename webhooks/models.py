"""Webhook channels, the store's signing secret and deliveries (after Saleor's EventDelivery /
EventDeliveryAttempt).

A delivery is one event to be pushed to one channel; each try is an attempt row.
Deliveries reference their event with on_delete=CASCADE, so they follow the journal's retention.
"""

import uuid
from urllib.parse import urlsplit

from django.db import models
from django.db.models.expressions import RawSQL
from django.utils import timezone

from core.database.list_totals import ListTotals


def url_origin(url: str) -> str:
    """scheme://host[:port] of a URL: what the API shows instead of the full URL."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    origin = f"{parts.scheme}://{host}"
    if parts.port is not None:
        origin += f":{parts.port}"
    return origin


class WebhookChannel(models.Model):
    """One of a store's webhook channels (docs/design.md "Webhooks"): a URL and the event types
    it is sent. A store has several; they share the store's signing secret
    (WebhookSigningSecret). The claim and wake-up statements (webhooks/dispatch/leases.py,
    webhooks/dispatch/leases.py) name its table in SQL."""

    DISABLED_BY_USER = "user"
    DISABLED_GONE = "gone"
    DISABLED_FAILING = "failing"
    DISABLED_REASONS = [
        (DISABLED_BY_USER, "disabled by a user"),
        (DISABLED_GONE, "the receiver answered 410 Gone"),
        (DISABLED_FAILING, "every attempt failed for too long"),
    ]

    store = models.ForeignKey(
        "stores.Store", on_delete=models.CASCADE, related_name="webhook_channels"
    )
    # The channel's id in the API (the SDK's `id`, a UUID); the integer pk stays internal (the
    # send slots' owner, the drain markers).
    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001 (SDK: string|null)
    url = models.URLField(max_length=2048)
    enabled = models.BooleanField(default=True)
    disabled_reason = models.CharField(
        max_length=16, choices=DISABLED_REASONS, blank=True, default=""
    )
    # The SDK's allowed_notifications: registered event types, sorted, unique.
    event_types = models.JSONField(default=list)
    # Start of the current run of failed attempts; cleared by any 2xx.
    failing_since = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # The same canonical URL twice in one store is refused.
            models.UniqueConstraint(fields=["store", "url"], name="channel_store_url_unique")
        ]
        indexes = [
            # A released send slot of the failing channels' share wakes the next failing
            # channel in id order (webhooks/dispatch/attempts.py).
            models.Index(
                fields=["id"],
                name="channel_failing_idx",
                condition=models.Q(failing_since__isnull=False),
            ),
        ]

    def __str__(self):
        # The origin only: the path or query can be a credential (hooks.slack.com/services/...),
        # and this text goes to admin messages (a cookie), LogEntry and delete confirmations.
        return f"{self.store_id} -> {url_origin(self.url)}"


class WebhookSigningSecret(models.Model):
    """The store-wide signing secret of its channels (PUT /api/v2/webhook-channels/signing-secret).

    The previous secret still signs, as a second Standard Webhooks signature, until
    previous_secret_expires_at (WEBHOOKS_PREVIOUS_SECRET_TTL, 24 h), so receivers can switch
    secrets without dropping deliveries. No row: no secret configured yet.
    """

    store = models.OneToOneField(
        "stores.Store", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    # whsec_ + base64 of the key: a supplied 255-character secret is up to 1020 UTF-8 bytes.
    secret = models.CharField(max_length=1400)
    previous_secret = models.CharField(max_length=1400, blank=True, default="")
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return f"signing secret of store {self.store_id}"


# "Due delivery", written once: pending, its attempt due at `now`, and no live lease holds it. What
# a claim may take, what wakes a drain, what the sweeper re-queues and the backlog counts. SQL text,
# so the claim and the wake-up statements (webhooks/dispatch/attempts.py,
# webhooks/dispatch/leases.py) use it as it is; `pending` is a constant in it, so their generic
# plans can use the partial indexes on pending deliveries.
DUE_SQL = (
    "{delivery}.status = 'pending' AND {delivery}.next_attempt_at <= {now} "
    "AND ({delivery}.lease_until IS NULL OR {delivery}.lease_until < {now})"
)


def due_sql(*, delivery: str, now: str) -> str:
    """DUE_SQL for the delivery table named `delivery` in a statement, `now` its parameter."""
    return DUE_SQL.format(delivery=delivery, now=now)


class WebhookDeliveryQuerySet(models.QuerySet):
    def due(self, now):
        """Deliveries due at `now` (DUE_SQL)."""
        # Fixed text from this module; `now` is a parameter.
        sql = due_sql(delivery=f'"{self.model._meta.db_table}"', now="%s")
        return self.filter(RawSQL(sql, [now, now], output_field=models.BooleanField()))  # noqa: S611


class WebhookDelivery(models.Model):
    STATUS_PENDING = "pending"  # a constant in DUE_SQL
    STATUS_SUCCEEDED = "succeeded"
    STATUS_FAILED = "failed"
    STATUS_DISABLED = "disabled"
    STATUSES = [
        (STATUS_PENDING, "pending"),
        (STATUS_SUCCEEDED, "succeeded"),
        (STATUS_FAILED, "failed"),
        (STATUS_DISABLED, "disabled"),
    ]

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Indexed by delivery_store_created_id_idx (store first), not on its own.
    store = models.ForeignKey(
        "stores.Store", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    # No foreign key in the database: PostgreSQL refuses to drop a partition of a referenced
    # table, and the journal's days are dropped (docs/decisions/events.md "Partitioned by
    # day"). A delivery is written only with its event, in its transaction, and goes with its
    # event's day.
    event = models.ForeignKey(
        "events.Event",
        on_delete=models.CASCADE,
        related_name="webhook_deliveries",
        db_constraint=False,
    )
    # The event's occurred_at: the day partition of the delivery is its event's.
    event_occurred_at = models.DateTimeField()
    # Denormalised from the event for the list filter without a join.
    event_type = models.CharField(max_length=120)
    # Null once the channel is deleted: the delivery stays in the history.
    channel = models.ForeignKey(
        WebhookChannel,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="deliveries",
    )
    # scheme://host[:port] of the URL it was (or will be) sent to; never the full URL.
    destination_origin = models.CharField(max_length=300)
    status = models.CharField(max_length=16, choices=STATUSES, default=STATUS_PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    # null before any response (spec: "string or null"), "" for an empty body.
    response_body = models.TextField(null=True, blank=True)  # noqa: DJ001
    # Claim of the worker sending the current attempt (see attempts.delivery_claim).
    lease_until = models.DateTimeField(null=True, blank=True)
    lease_token = models.UUIDField(null=True, blank=True)
    # Id of the delivery this one replays (null for one created by its event); replays are
    # capped per store per window (services.delivery_replay). A plain column, not a foreign
    # key: an audit note that needs no index for deletes (deliveries go with their event).
    replay_of = models.UUIDField(null=True, blank=True)
    # Queued by a recover (webhooks/channels/recovery.py): its event is not missed by that channel
    # again, whatever becomes of this delivery (a disable and enable after it included).
    recovered = models.BooleanField(default=False, db_default=False)
    # When a send message was last queued; the sweeper re-queues due deliveries after a while.
    enqueued_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = WebhookDeliveryQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "webhook deliveries"
        indexes = [
            # The list's order, id included: no sort of equal created_at values for the id
            # tie-breaker (docs/benchmarks/coupons-growth.md).
            models.Index(
                fields=["store", "-created_at", "-id"], name="delivery_store_created_id_idx"
            ),
            models.Index(
                fields=["next_attempt_at"],
                name="delivery_due_idx",
                condition=models.Q(status="pending"),
            ),
            # The replay cap counts a store's recent replays.
            models.Index(
                fields=["store", "created_at"],
                name="delivery_store_replays_idx",
                condition=models.Q(replay_of__isnull=False),
            ),
            # A channel's drain claims its oldest due delivery.
            models.Index(
                fields=["channel", "next_attempt_at"],
                name="delivery_channel_due_idx",
                condition=models.Q(status="pending"),
            ),
        ]

    def __str__(self):
        return f"{self.event_type} {self.id} ({self.status})"


class WebhookRecovery(models.Model):
    """One recover call of a store's channel (webhooks/channels/recovery.py): the store's recover
    budget
    counts these rows and their `queued` in a sliding window. Written when the call starts,
    with the deliveries it may queue, and lowered to those it queued when it ends, so
    concurrent calls cannot spend the same budget twice."""

    # Indexed by recovery_store_created_idx (store first), not on its own.
    store = models.ForeignKey(
        "stores.Store", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    # The channel's id; a plain column, the row outlives a deleted channel within its window.
    channel_id = models.BigIntegerField()
    queued = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["store", "created_at"], name="recovery_store_created_idx")]

    def __str__(self):
        return f"recover of channel {self.channel_id}: {self.queued} queued"


class WebhookDeliveryTotal(models.Model):
    """A store's number of deliveries, the total of its unfiltered delivery list.

    Maintained by PostgreSQL triggers on webhooks_webhookdelivery in the writer's transaction
    (DELIVERY_TOTALS, migration 0005); no code writes it but `manage.py recount_lists`. No row
    means the store has no deliveries.
    """

    store = models.OneToOneField(
        "stores.Store", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    deliveries = models.BigIntegerField(default=0)

    def __str__(self):
        return f"store {self.store_id}: {self.deliveries} deliveries"


DELIVERY_TOTALS = ListTotals(
    table=WebhookDelivery._meta.db_table,
    totals_table=WebhookDeliveryTotal._meta.db_table,
    counters=(("deliveries", "TRUE"),),
    # Deliveries are updated several times each (claims, attempts, outcomes) on the sending
    # hot path; none changes the count, and nothing moves a delivery to another store.
    store_fixed=True,
)


class WebhookDeliveryAttempt(models.Model):
    """One try of a delivery, saved with its outcome. A try whose worker died is recorded as
    abandoned by the worker that takes the delivery over once the lease has run out."""

    # No foreign key in the database, as WebhookDelivery.event: attempts go with their
    # delivery's day partition.
    delivery = models.ForeignKey(
        WebhookDelivery,
        on_delete=models.CASCADE,
        related_name="attempt_records",
        db_constraint=False,
    )
    delivery_event_occurred_at = models.DateTimeField()
    number = models.PositiveIntegerField()
    # scheme://host[:port] it was sent to, as the delivery's destination_origin: never the full
    # URL, whose path and query can be a credential (docs/decisions/hardening.md, Hardening IV).
    origin = models.CharField(max_length=300, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.TextField(null=True, blank=True)  # noqa: DJ001
    error = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        ordering = ["delivery", "number"]
        constraints = [
            # With the partition key, as a partitioned table's unique keys must.
            models.UniqueConstraint(
                fields=["delivery", "number", "delivery_event_occurred_at"],
                name="attempt_number_unique",
            )
        ]

    def __str__(self):
        return f"attempt {self.number} of {self.delivery_id}"


class WebhookSendSlot(models.Model):
    """One send slot, leased by the worker sending with it (webhooks/dispatch/attempts.py).

    A send holds one free slot of each of its bounds at once: its channel's
    (WEBHOOKS_CHANNEL_CONCURRENCY), its store's account's (WEBHOOKS_ACCOUNT_CONCURRENCY) and,
    while its channel is failing, the failing channels' shared ones
    (WEBHOOKS_FAILING_CONCURRENCY). A row is free when `lease_until` is null or past: a slot
    whose worker died comes back when its lease runs out, whatever pools the connections.
    """

    SCOPE_CHANNEL = 1
    SCOPE_ACCOUNT = 2
    SCOPE_FAILING = 3
    SCOPES = [
        (SCOPE_CHANNEL, "channel"),
        (SCOPE_ACCOUNT, "account"),
        (SCOPE_FAILING, "failing channels"),
    ]

    scope = models.PositiveSmallIntegerField(choices=SCOPES)
    # The channel's id, the account's (the user who created the store; minus the store's id
    # when that user is gone), or 0 for the failing channels' share.
    owner = models.BigIntegerField()
    number = models.PositiveSmallIntegerField()
    lease_until = models.DateTimeField(null=True, blank=True)
    lease_token = models.UUIDField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scope", "owner", "number"], name="send_slot_unique")
        ]

    def __str__(self):
        return f"{self.get_scope_display()} {self.owner} slot {self.number}"
