"""System checks of the webhooks settings (`manage.py check`, run before serving and migrating)."""

from django.conf import settings
from django.core import checks


@checks.register(checks.Tags.compatibility, "webhooks")
def leases_outlast_the_sending_tasks(app_configs, **kwargs):
    # A lease that ends while its task still runs hands the delivery, or the slot, to a second
    # worker: a double send, one send over a bound.
    errors = []
    margin = settings.WEBHOOKS_LEASE_MARGIN_SECONDS
    if (
        margin < 2
        or settings.WEBHOOKS_TIME_LIMIT_SECONDS + margin >= settings.WEBHOOKS_LEASE_SECONDS
    ):
        errors.append(
            checks.Error(
                "WEBHOOKS_LEASE_SECONDS must be more than WEBHOOKS_TIME_LIMIT_SECONDS + "
                "WEBHOOKS_LEASE_MARGIN_SECONDS, and the margin at least 2 s.",
                hint="Raise WEBHOOKS_LEASE_SECONDS or lower WEBHOOKS_TIME_LIMIT_SECONDS.",
                id="webhooks.E001",
            )
        )
    # A drain's last claim comes at WEBHOOKS_DRAIN_SECONDS and its attempt may take
    # WEBHOOKS_TIMEOUT_SECONDS: both within the time limit, or the limit would regularly kill
    # drains in the middle of an attempt.
    drain_and_attempt = settings.WEBHOOKS_DRAIN_SECONDS + settings.WEBHOOKS_TIMEOUT_SECONDS
    if drain_and_attempt >= settings.WEBHOOKS_TIME_LIMIT_SECONDS:
        errors.append(
            checks.Error(
                "WEBHOOKS_DRAIN_SECONDS + WEBHOOKS_TIMEOUT_SECONDS must be less than "
                "WEBHOOKS_TIME_LIMIT_SECONDS.",
                hint="Lower WEBHOOKS_DRAIN_SECONDS or raise WEBHOOKS_TIME_LIMIT_SECONDS.",
                id="webhooks.E002",
            )
        )
    # A lease lasts three heartbeats and is renewed each (webhooks/dispatch/leases.py): no heartbeat
    # is a renewing thread spinning, and one past a third of the lease cannot keep it.
    heartbeat = settings.WEBHOOKS_HEARTBEAT_SECONDS
    if not 0 < 3 * heartbeat <= settings.WEBHOOKS_LEASE_SECONDS:
        errors.append(
            checks.Error(
                "WEBHOOKS_HEARTBEAT_SECONDS must be more than 0 and at most a third of "
                "WEBHOOKS_LEASE_SECONDS.",
                hint="A dead worker's leases come back within three heartbeats (1 s by default).",
                id="webhooks.E005",
            )
        )
    return errors


@checks.register(checks.Tags.compatibility, "webhooks")
def bounded_settings_stay_in_their_bounds(app_configs, **kwargs):
    # The DNS lookup of a channel holds its web request's thread (hardening point 4: at most
    # 2 s), and every bound of a send needs at least one slot or nothing is ever sent.
    errors = []
    if not 0 < settings.WEBHOOKS_DNS_TIMEOUT_SECONDS <= 2:
        errors.append(
            checks.Error(
                "WEBHOOKS_DNS_TIMEOUT_SECONDS must be more than 0 and at most 2.",
                hint="A longer lookup holds a web thread while a channel is saved.",
                id="webhooks.E003",
            )
        )
    for name in (
        "WEBHOOKS_CHANNEL_CONCURRENCY",
        "WEBHOOKS_ACCOUNT_CONCURRENCY",
        "WEBHOOKS_FAILING_CONCURRENCY",
    ):
        if getattr(settings, name) < 1:
            errors.append(
                checks.Error(
                    f"{name} must be at least 1.",
                    hint="Keep it below the worker process count (one store's, one account's "
                    "or all failing receivers must not hold every process).",
                    id="webhooks.E004",
                )
            )
    return errors
