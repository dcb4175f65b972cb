"""The contract run: schemathesis over the whole /api/schema/, in process (WSGI).

Every operation of the schema (the other areas' endpoints included, as they land) is called
with generated valid and invalid requests, authenticated with a seeded all-abilities API key
and X-STORE; the run fails on any 5xx and on any response that the schema does not describe
(status code, content type, headers, body), with schemathesis's default checks.
"""

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, settings

from accounts.abilities import ROLE_OWNER
from tests.factories import MembershipFactory, UserFactory, make_api_key

CONTRACT_STORE_SLUG = "contract-store"
MAX_EXAMPLES = 25
# schemathesis's default for "a schema-valid request is accepted" (positive_data_acceptance).
ACCEPTED_STATUSES = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]

# Operations whose inputs follow a rule no schema can state (an HMAC-signed cursor is any
# string to a schema; "in the future" depends on the clock), listed with the extra statuses a
# schema-valid request may get and why.
# Everything a schema CAN state (patterns, lengths, enums, required bodies) goes in the schema.
SEMANTIC_REJECTIONS: list[tuple[str, list[int], str]] = [
    (
        "GET /api/v2/events",
        [400, 409, 410],
        "the cursor is HMAC-signed: a forged one is 400, another store's or filter set's 409, "
        "one past retention 410 (DESIGN.md 'Event journal')",
    ),
    (
        "POST /api/v1/coupons",
        [422],
        "expires_at must be in the future, which a date-time schema cannot state (DESIGN.md "
        "'Coupons (v1)'; each rule has its own test in tests/coupons)",
    ),
    (
        "PATCH /api/v1/coupons/{id}",
        [422],
        "expires_at must be in the future; the merged coupon must be valid (DESIGN.md "
        "'Coupons (v1)')",
    ),
]

schema = schemathesis.openapi.from_wsgi(
    "/api/schema/",
    get_wsgi_application(),
    config=schemathesis.Config.from_dict(
        {
            "generation": {"max-examples": MAX_EXAMPLES},
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
            ],
        }
    ),
)
# The secret of the key seeded for the running test (set by the `contract_key` fixture).
_current_secret: dict[str, str] = {}


@schema.auth(refresh_interval=None)
class SeededApiKey:
    """Authenticates generated requests; requests that test missing auth are left alone."""

    def get(self, case, context):
        # Outside a test (schemathesis probes at collection) there is no seeded key yet.
        return _current_secret.get("secret", "sf_no-key-outside-a-test")

    def set(self, case, data, context):
        case.headers = case.headers or {}
        case.headers["Authorization"] = f"Bearer {data}"
        case.headers.setdefault("X-STORE", CONTRACT_STORE_SLUG)


@pytest.fixture
def contract_key(db, settings):
    """A user owning the contract store, with an all-abilities key; budgets out of the way."""
    settings.API_RATE_LIMIT_PER_MINUTE = 1_000_000
    user = UserFactory()
    MembershipFactory(user=user, store__slug=CONTRACT_STORE_SLUG, role=ROLE_OWNER)
    _current_secret["secret"] = make_api_key(user)
    # The WSGI app closes the connection when a request starts and finishes, which would end
    # the test's transaction; Django's test client disconnects these handlers the same way.
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)
    _current_secret.clear()


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
