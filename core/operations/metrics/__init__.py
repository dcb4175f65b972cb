"""The service's own Prometheus counters, incremented where the counted thing happens; with
PROMETHEUS_MULTIPROC_DIR each process's values are summed by /metrics (docs/decisions/metrics.md
"Where counters live"). Database gauges are computed at scrape time (webhooks/dispatch/backlog.py).
"""

import json
import os

from django.core.exceptions import ImproperlyConfigured
from prometheus_client import Counter, values

if os.environ.get("PROMETHEUS_MULTIPROC_DIR") and not values.ValueClass._multiprocess:
    # This process's counts would be missing from every scrape, silently.
    raise ImproperlyConfigured(
        "prometheus_client was imported before PROMETHEUS_MULTIPROC_DIR was set: set it in "
        "the environment of the process (docs/metrics.md)."
    )

EVENTS_RECORDED = Counter(
    "storefront_events_recorded",
    "Events written to the journal, by type.",
    ["type"],
)
WEBHOOK_ATTEMPTS = Counter(
    "storefront_webhook_delivery_attempts",
    "Webhook delivery attempts by result: succeeded (2xx), http_error (another status), "
    "network_error (no response: connection, timeout, refused address).",
    ["result"],
)
WEBHOOK_DELIVERIES_FINISHED = Counter(
    "storefront_webhook_deliveries_finished",
    "Webhook deliveries a worker made final: succeeded, failed (no 2xx after the last "
    "attempt, 410 Gone, or channel turned off after an attempt), disabled (channel "
    "off when its first attempt came up). Deliveries settled in bulk when a channel is "
    "turned off are not counted here (see storefront_webhook_channels_disabled).",
    ["status"],
)
WEBHOOK_FANOUT_WITHHELD = Counter(
    "storefront_webhook_fanout_withheld",
    "Events recorded without their webhook deliveries, by reason: pending_ceiling (the store "
    "had WEBHOOKS_STORE_PENDING_MAX pending deliveries; recover sends them later).",
    ["reason"],
)
OAUTH_TOKEN_REQUESTS = Counter(
    "storefront_oauth_token_requests",
    "Requests to /oauth/token that reached the exchange, by grant type and outcome (issued, "
    "refused); `error` is the RFC 6749 error code of a refusal.",
    ["grant_type", "outcome", "error"],
)
RATE_LIMIT_REFUSALS = Counter(
    "storefront_rate_limit_refusals",
    "Requests refused with 429 by a rate limit: cred (per-credential API budget), oauth "
    "(per-address budget of the OAuth endpoints).",
    ["limit"],
)
OUTBOUND_CALL_REFUSALS = Counter(
    "storefront_outbound_call_refusals",
    "Outbound calls a request would have waited for, refused by their bound: `call` "
    "test_send or dns_check; `bound` store (429: the store's one in flight) or process "
    "(503: WEBHOOKS_OUTBOUND_CALLS_PER_PROCESS).",
    ["call", "bound"],
)
SIGN_IN_LOCKOUTS = Counter(
    "storefront_sign_in_lockouts",
    "Sign-in attempts answered with the lock-out page (django-axes, any of its limits).",
)

ATTEMPT_RESULTS = ("succeeded", "http_error", "network_error")
FINAL_DELIVERY_STATUSES = ("succeeded", "failed", "disabled")
FANOUT_WITHHELD_REASONS = ("pending_ceiling",)
GRANT_TYPES = ("authorization_code", "refresh_token")
# RFC 6749 §5.2; anything else is counted as `other`, so a client cannot create new series.
TOKEN_ERRORS = (
    "invalid_request",
    "invalid_client",
    "invalid_grant",
    "unauthorized_client",
    "unsupported_grant_type",
    "invalid_scope",
)
RATE_LIMITS = ("cred", "oauth", "probe", "auth")


def _known(value, known: tuple[str, ...]) -> str:
    return value if value in known else "other"


def event_recorded(event_type: str) -> None:
    EVENTS_RECORDED.labels(type=event_type).inc()


def webhook_attempt_finished(*, response_status: int | None, final_status: str | None) -> None:
    """One attempt's result, and the delivery's status when the attempt made it final."""
    if response_status is None:
        result = "network_error"
    elif 200 <= response_status < 300:
        result = "succeeded"
    else:
        result = "http_error"
    WEBHOOK_ATTEMPTS.labels(result=result).inc()
    if final_status in FINAL_DELIVERY_STATUSES:
        WEBHOOK_DELIVERIES_FINISHED.labels(status=final_status).inc()


def webhook_delivery_settled(status: str) -> None:
    """A delivery made final without an attempt (its channel was off when claimed)."""
    WEBHOOK_DELIVERIES_FINISHED.labels(status=status).inc()


def webhook_fanout_withheld(reason: str) -> None:
    """An event whose webhook deliveries were not made (webhooks.services)."""
    WEBHOOK_FANOUT_WITHHELD.labels(reason=_known(reason, FANOUT_WITHHELD_REASONS)).inc()


def oauth_token_answered(request, response) -> None:
    """A token endpoint answer: 200 issued tokens; a 4xx with an RFC 6749 body refused."""
    grant_type = _known(request.POST.get("grant_type", ""), GRANT_TYPES)
    if response.status_code == 200:
        OAUTH_TOKEN_REQUESTS.labels(grant_type=grant_type, outcome="issued", error="").inc()
    elif 400 <= response.status_code < 500:
        error = _known(_oauth_error_code(response), TOKEN_ERRORS)
        OAUTH_TOKEN_REQUESTS.labels(grant_type=grant_type, outcome="refused", error=error).inc()


def _oauth_error_code(response) -> str:
    try:
        body = json.loads(response.content)
    except ValueError:
        return ""
    return body.get("error", "") if isinstance(body, dict) else ""


def sign_in_locked_out() -> None:
    SIGN_IN_LOCKOUTS.inc()


def outbound_call_refused(*, call: str, bound: str) -> None:
    OUTBOUND_CALL_REFUSALS.labels(call=call, bound=bound).inc()


def rate_limit_refused(bucket: str) -> None:
    """`bucket` is the limiter's key (`cred:<key>`, `oauth:<endpoint>:<address>`): only its
    kind becomes a label, never the credential or the address."""
    RATE_LIMIT_REFUSALS.labels(limit=_known(bucket.partition(":")[0], RATE_LIMITS)).inc()


# Every series exists from the start at 0, so rate() and alerts see the first increment (the
# events app creates its types' series: config imports no app).
for _result in ATTEMPT_RESULTS:
    WEBHOOK_ATTEMPTS.labels(result=_result)
for _status in FINAL_DELIVERY_STATUSES:
    WEBHOOK_DELIVERIES_FINISHED.labels(status=_status)
for _limit in RATE_LIMITS:
    RATE_LIMIT_REFUSALS.labels(limit=_limit)
for _call in ("test_send", "dns_check"):
    for _bound in ("store", "process"):
        OUTBOUND_CALL_REFUSALS.labels(call=_call, bound=_bound)
for _reason in FANOUT_WITHHELD_REASONS:
    WEBHOOK_FANOUT_WITHHELD.labels(reason=_reason)
