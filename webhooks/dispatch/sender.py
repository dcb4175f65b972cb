"""The HTTP side of a delivery: a signed POST within the attempt's budget.

Signing follows the Standard Webhooks spec (https://www.standardwebhooks.com/, "Signature
scheme") through its reference library, the one our receivers verify with: HMAC-SHA256 over
`{webhook-id}.{webhook-timestamp}.{body}` with the base64-decoded `whsec_` secret, sent as
`webhook-signature: v1,<base64>` (space-separated when two secrets sign during a rotation).

Time: webhooks/dispatch/deadline.py (one budget for DNS, connect, request and response). Where the
request goes: webhooks/dispatch/connection.py (the address the SSRF check approved, named as the
host)."""

import json
import re
import socket
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import requests
from django.conf import settings
from django.utils import timezone
from standardwebhooks import Webhook

from events.models import Event
from events.serializers import event_resource
from webhooks.dispatch.connection import AddressRefused, answer_forget, session_get, session_reset
from webhooks.dispatch.deadline import AttemptDeadline, current_deadline
from webhooks.models import (
    WebhookSigningSecret,
    url_origin,
)


def signature_header(*, secrets: list[str], message_id: str, timestamp: int, body: bytes) -> str:
    when = datetime.fromtimestamp(timestamp, tz=UTC)
    # The library signs text: the body is the UTF-8 JSON we send, so it encodes back the same.
    payload = body.decode()
    return " ".join(Webhook(secret).sign(message_id, when, payload) for secret in secrets)


@dataclass(frozen=True)
class SendResult:
    response_status: int | None
    response_body: str | None
    error: str
    duration_ms: int
    retry_after_seconds: float | None = None

    @property
    def succeeded(self) -> bool:
        return self.response_status is not None and 200 <= self.response_status < 300


# RFC 9110 §5.6.7: the HTTP-date forms, IMF-fixdate and the two obsolete ones.
_DAY = "(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_MONTH = "(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_TIME = "[0-9]{2}:[0-9]{2}:[0-9]{2}"
_HTTP_DATE = re.compile(
    rf"{_DAY}, [0-9]{{2}} {_MONTH} [0-9]{{4}} {_TIME} GMT"
    rf"|(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day, [0-9]{{2}}-{_MONTH}-[0-9]{{2}} {_TIME} GMT"
    rf"|{_DAY} {_MONTH} [ 0-9][0-9] {_TIME} [0-9]{{4}}"
)
_DELAY_SECONDS = re.compile("[0-9]+")


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds (RFC 9110 §10.2.3): delay-seconds (ASCII digits only: `²` is a
    digit to str.isdigit) or an HTTP-date; anything else is no Retry-After. No upper bound
    here: failures.retry_delay caps the wait."""
    value = (value or "").strip(" \t")
    if _DELAY_SECONDS.fullmatch(value):
        return float(value)  # inf for absurdly many digits, never an exception
    if not _HTTP_DATE.fullmatch(value):
        return None
    try:
        when = parsedate_to_datetime(value)
    except ValueError:  # a day or a year out of range
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)  # the asctime form is GMT without saying so
    return max(0.0, when.timestamp() - time.time())


def _read_limited(response: requests.Response, limit: int) -> str:
    chunks, size = [], 0
    for chunk in response.iter_content(chunk_size=limit):
        chunks.append(chunk)
        size += len(chunk)
        if size >= limit:
            break
    raw = b"".join(chunks)[:limit]
    return raw.decode("utf-8", errors="replace")


def send(
    *, url: str, message_id: str, body: bytes, secrets: list[str], seconds: float | None = None
) -> SendResult:
    """POSTs one signed delivery within `seconds` in all (WEBHOOKS_TIMEOUT_SECONDS unless
    given); never raises for network or HTTP failures."""
    seconds = settings.WEBHOOKS_TIMEOUT_SECONDS if seconds is None else seconds
    with AttemptDeadline(seconds) as deadline:
        result = _post(url=url, message_id=message_id, body=body, secrets=secrets, seconds=seconds)
    if deadline.expired:
        session_reset()
        if not result.succeeded:
            return SendResult(None, None, _timeout_error(deadline), result.duration_ms)
    elif result.response_status is None:
        answer_forget(url)  # no answer: the host may have moved
    # A 2xx head received in time stands even when reading its body was cut.
    return result


def _timeout_error(deadline: AttemptDeadline) -> str:
    return f"timeout: no complete answer within {deadline.seconds:g} s"


def _failure_kind(error: requests.RequestException) -> str:
    """What went wrong, in words that hold nothing of the URL."""
    if isinstance(error, requests.exceptions.SSLError):
        return "TLS error"
    if isinstance(error, requests.Timeout):
        return "connect timeout" if isinstance(error, requests.ConnectTimeout) else "timeout"
    reason = getattr(error.args[0], "reason", None) if error.args else None  # urllib3's cause
    if isinstance(getattr(reason, "__cause__", None), ConnectionRefusedError):
        return "connection refused"
    return "connection error" if isinstance(error, requests.ConnectionError) else "request error"


def _post(
    *, url: str, message_id: str, body: bytes, secrets: list[str], seconds: float
) -> SendResult:
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": settings.WEBHOOKS_USER_AGENT,
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature_header(
            secrets=secrets, message_id=message_id, timestamp=timestamp, body=body
        ),
    }
    started = time.monotonic()

    def elapsed_ms() -> int:
        return int((time.monotonic() - started) * 1000)

    try:
        response = session_get().post(
            url,
            data=body,
            headers=headers,
            timeout=seconds,
            allow_redirects=False,
            stream=True,
            verify=settings.WEBHOOKS_CA_BUNDLE or True,
        )
    except AddressRefused as refusal:  # names the host and the kind of range, no address
        return SendResult(None, None, str(refusal), elapsed_ms())
    except (
        socket.gaierror
    ):  # no answer, or none within the budget (webhooks/dispatch/connection.py)
        return SendResult(None, None, f"DNS failure: {url_origin(url)}", elapsed_ms())
    except requests.RequestException as error:
        # The kind and the origin only: the exception's text holds the URL's path and query,
        # which can be a credential (docs/design.md "Webhooks").
        error_text = f"{_failure_kind(error)}: {url_origin(url)}"
        return SendResult(None, None, error_text, elapsed_ms())
    deadline = current_deadline()
    if deadline is not None and deadline.expired:
        # Cut before the head was complete: http.client still hands over the status line it
        # read, but a response whose headers never finished is no 2xx answer.
        response.close()
        return SendResult(None, None, _timeout_error(deadline), elapsed_ms())
    try:
        response_body = _read_limited(response, settings.WEBHOOKS_RESPONSE_BODY_LIMIT)
        error = ""
    except requests.RequestException:
        response_body, error = None, f"reading the response failed: {url_origin(url)}"
    finally:
        response.close()
    retry_after = None
    if response.status_code in (429, 503):
        retry_after = _retry_after(response.headers.get("Retry-After"))
    if not error and not 200 <= response.status_code < 300:
        error = f"HTTP {response.status_code}"
    return SendResult(response.status_code, response_body, error, elapsed_ms(), retry_after)


def webhook_body(event: Event, *, test: bool) -> bytes:
    """`event` may be unsaved (a test event is never journaled)."""
    resource = {**event_resource(event), "test": test}
    return json.dumps(resource, separators=(",", ":")).encode()


def signing_secrets(*, store_id) -> list[str]:
    """The secrets a delivery of the store is signed with: the current one, and the previous
    one while its grace lasts. Empty while the store has none configured."""
    found = WebhookSigningSecret.objects.filter(store_id=store_id).first()
    if found is None:
        return []
    secrets = [found.secret]
    expires = found.previous_secret_expires_at
    if found.previous_secret and expires and expires > timezone.now():
        secrets.append(found.previous_secret)
    return secrets
