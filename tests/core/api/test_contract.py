"""The contract run: schemathesis over the whole /api/schema/, in process (WSGI).

Every operation of the schema (the other areas' endpoints included, as they land) is called
with generated valid and invalid requests; the run fails on any 5xx and on any response that
the schema does not describe (status code, content type, headers, body), with schemathesis's
default checks. API operations are authenticated with a seeded all-abilities API key and
X-STORE; the OAuth protocol endpoints as the CLI and the browser call them: discovery, token
and revoke with no credential (a public client), the authorization endpoint with a signed-in
browser session and its CSRF token.
"""

import pytest
import schemathesis
from django.conf import settings as django_settings
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, transaction
from django.middleware.csrf import get_token
from django.test import Client, RequestFactory
from hypothesis import HealthCheck, settings

from accounts.abilities import ROLE_OWNER
from oauth_cli.services import cli_application_ensure
from tests.factories import MembershipFactory, UserFactory, make_api_key
from tests.scheduling import runs_first_worker_files

CONTRACT_STORE_SLUG = "contract-store"
MAX_EXAMPLES = 25
# schemathesis's default for "a schema-valid request is accepted" (positive_data_acceptance).
ACCEPTED_STATUSES = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]
# schemathesis's default for "a schema-invalid request is rejected" (negative_data_rejection).
REJECTION_STATUSES = [
    "400",
    "401",
    "403",
    "404",
    "405",
    "406",
    "409",
    "415",
    "422",
    "428",
    "429",
    "5xx",
]

# Operations whose inputs follow a rule no schema can state (an HMAC-signed cursor is any
# string to a schema; "in the future" depends on the clock), listed with the extra statuses a
# schema-valid request may get and why.
# Everything a schema CAN state (patterns, lengths, enums, required bodies) goes in the schema.
SEMANTIC_REJECTIONS: list[tuple[str, list[int], str]] = [
    (
        "GET /api/v2/events",
        [400, 409, 410],
        "the cursor is HMAC-signed: a forged one is 400, another store's or filter set's 409, "
        "one past retention 410 (docs/design.md 'Event journal')",
    ),
    (
        "POST /api/v1/coupons",
        [422],
        "expires_at must be in the future, which a date-time schema cannot state (docs/design.md "
        "'Coupons (v1)'; each rule has its own test in tests/coupons)",
    ),
    (
        "PATCH /api/v1/coupons/{id}",
        [422],
        "expires_at must be in the future; the merged coupon must be valid (docs/design.md "
        "'Coupons (v1)')",
    ),
    *(
        (
            f"{operation} /api/{version}/coupons{path}",
            [422],
            "coupon writes: expires_at in the future, the merged coupon's rules (a PERCENTAGE "
            "discount of at most 100, a cap only on PERCENTAGE, payments with subscriptions, "
            "products when not store_wide), a code free among live coupons, batch ids that are "
            "live coupons of the store; a search names fields and values of their types "
            "(docs/decisions/coupons.md, the whole coupon; tests/coupons, tests/sdk)",
        )
        for version in ("v1", "v2")
        for operation, path in (
            ("POST", ""),
            ("PUT", "/{id}"),
            ("PATCH", "/{id}"),
            ("POST", "/search"),
            ("POST", "/batch"),
            ("PATCH", "/batch"),
            ("DELETE", "/batch"),
        )
        if (version, operation, path) not in (("v1", "POST", ""), ("v1", "PATCH", "/{id}"))
    ),
    *(
        (
            f"{method} /oauth/authorize",
            [400],
            "auth_token must be the live, unused token of a consent page this session was "
            "shown, and client_id/state must equal that authorization request's "
            "(docs/decisions/oauth.md 'Authorization endpoint'; tests/oauth_cli)",
        )
        for method in ("POST", "DELETE")
    ),
    (
        "PUT /api/v2/webhook-channels/signing-secret",
        [422],
        "a secret that starts with whsec_ must be the base64 of 24 to 64 bytes (Standard "
        "Webhooks), which a pattern over any string cannot state for the other secrets "
        "(docs/api/webhooks.md; tests/webhooks/test_channel_edges.py)",
    ),
    (
        "POST /oauth/token",
        [400],
        "the code must be live, issued for this redirect_uri, with a challenge the verifier "
        "hashes to; a refresh token must be live: otherwise invalid_grant (RFC 6749 §5.2; "
        "tests/oauth_cli/test_token.py)",
    ),
]

# Operations that answer some schema-invalid requests with a redirect instead of a 4xx, with
# the statuses and why.
REDIRECTED_REJECTIONS: list[tuple[str, list[int], str]] = [
    (
        "GET /oauth/authorize",
        [302, 303],
        "once client_id and redirect_uri are valid, errors go back to the client's callback "
        "(RFC 6749 §4.1.2.1)",
    ),
]
OAUTH_PROTOCOL_PATHS = (
    r"^/(\.well-known/oauth-authorization-server|oauth/(authorize|token|revoke))$"
)

schema = schemathesis.openapi.from_wsgi(
    "/api/schema/",
    get_wsgi_application(),
    config=schemathesis.Config.from_dict(
        {
            "generation": {"max-examples": MAX_EXAMPLES},
            # The coverage phase builds its examples as the file is collected, which every
            # pytest-xdist worker does: only the worker that runs the file builds them
            # (tests/scheduling.py gives it this file), with schemathesis's phases as they are.
            **({} if runs_first_worker_files() else {"phases": {"coverage": {"enabled": False}}}),
            "operations": [
                {
                    "include-name": name,
                    "checks": {
                        "positive_data_acceptance": {
                            "expected-statuses": [*ACCEPTED_STATUSES, *map(str, statuses)]
                        }
                    },
                }
                for name, statuses, _reason in SEMANTIC_REJECTIONS
            ]
            + [
                {
                    "include-name": name,
                    "checks": {
                        "negative_data_rejection": {
                            "expected-statuses": [*REJECTION_STATUSES, *map(str, statuses)]
                        }
                    },
                }
                for name, statuses, _reason in REDIRECTED_REJECTIONS
            ],
        }
    ),
)
# The secret of the key seeded for the running test (set by the `contract_key` fixture).
_current_secret: dict[str, str] = {}
# The signed-in browser's cookies for the running test (session and CSRF).
_browser_cookies: dict[str, str] = {}


@schema.auth(refresh_interval=None).skip_for(path_regex=OAUTH_PROTOCOL_PATHS)
class SeededApiKey:
    """Authenticates generated requests; requests that test missing auth are left alone."""

    def get(self, case, context):
        # Outside a test (schemathesis probes at collection) there is no seeded key yet.
        return _current_secret.get("secret", "sf_no-key-outside-a-test")

    def set(self, case, data, context):
        case.headers = case.headers or {}
        case.headers["Authorization"] = f"Bearer {data}"
        case.headers.setdefault("X-STORE", CONTRACT_STORE_SLUG)


@schema.auth(refresh_interval=None).apply_to(path="/oauth/authorize")
class SignedInBrowser:
    """The consent page's browser: its session cookie, and the CSRF cookie whose secret the
    form's `_token` carries (a credential of the session, like the cookie itself)."""

    def get(self, case, context):
        return dict(_browser_cookies) or None

    def set(self, case, data, context):
        case.cookies = {**(case.cookies or {}), **data}
        if isinstance(case.body, dict) and isinstance(case.body.get("_token"), str):
            case.body["_token"] = data[django_settings.CSRF_COOKIE_NAME]


@pytest.fixture
def contract_key(db, settings):
    """A user owning the contract store, with an all-abilities key and a signed-in browser;
    the CLI client registered; budgets out of the way. On the worker that built the coverage
    phase's examples only (tests/scheduling.py)."""
    assert runs_first_worker_files(), "the contract run is on a worker that built no examples"
    settings.API_RATE_LIMIT_PER_MINUTE = 1_000_000
    settings.OAUTH_RATE_LIMIT_PER_MINUTE = 1_000_000
    # Invalid-credential probes must get 401, not the failure budget's 429 (valid keys are
    # served over it, so a run's 2xx and its probes' 429 would meet).
    settings.API_AUTH_FAILURES_PER_MINUTE = 1_000_000
    cli_application_ensure()
    user = UserFactory()
    MembershipFactory(user=user, store__slug=CONTRACT_STORE_SLUG, role=ROLE_OWNER)
    _current_secret["secret"] = make_api_key(user)
    browser = Client()
    browser.force_login(user)
    _browser_cookies[settings.SESSION_COOKIE_NAME] = browser.cookies[
        settings.SESSION_COOKIE_NAME
    ].value
    csrf_request = RequestFactory().get("/")
    get_token(csrf_request)  # draws the secret the CSRF cookie holds
    _browser_cookies[settings.CSRF_COOKIE_NAME] = csrf_request.META["CSRF_COOKIE"]
    # The WSGI app closes the connection when a request starts and finishes, which would end
    # the test's transaction; Django's test client disconnects these handlers the same way.
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)
    _current_secret.clear()
    _browser_cookies.clear()


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_schema(case, contract_key):
    # Hypothesis runs every example of an operation inside one test, so rows written by one
    # example (a coupon code, a store slug) would make a later schema-valid example a 422. Each
    # example runs in a savepoint that is rolled back; it is marked as Django's TestCase marks
    # its own blocks, so the durable service transactions still run inside it.
    example = transaction.atomic()
    example._from_testcase = True
    with example:
        case.call_and_validate()
        transaction.set_rollback(True)
