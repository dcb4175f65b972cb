"""Per-credential rate limits on Redis, failing open (docs/design.md "Limits and rate limits")."""

import pytest
from django.test import override_settings

from core.api import ratelimit
from tests.factories import make_api_key
from tests.outages import dead_redis_caches

# Every test here runs on a stopped clock, 30 s into a window: a minute boundary cannot split a
# test, and a test moves to the next window by moving the clock.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("rate_limit_window")]


def test_normal_responses_carry_the_budget(auth_client, settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 3
    remaining = []
    for _ in range(3):
        response = auth_client.get("/api/v2/me")
        assert response.status_code == 200
        assert response["X-RateLimit-Limit"] == "3"
        assert response["X-RateLimit-Reset"] == "30"
        remaining.append(response["X-RateLimit-Remaining"])
    assert remaining == ["2", "1", "0"]


def test_by_default_a_credential_gets_120_requests_a_minute(auth_client):
    response = auth_client.get("/api/v2/me")

    assert (response["X-RateLimit-Limit"], response["X-RateLimit-Remaining"]) == ("120", "119")


def test_a_new_window_brings_a_fresh_budget(auth_client, settings, rate_limit_window):
    settings.API_RATE_LIMIT_PER_MINUTE = 1
    auth_client.get("/api/v2/me")
    assert auth_client.get("/api/v2/me").status_code == 429
    # when: the clock reaches the next window
    rate_limit_window.shift(30)
    # then
    response = auth_client.get("/api/v2/me")
    assert response.status_code == 200
    assert response["X-RateLimit-Reset"] == "60"


def test_over_the_budget_is_429_with_retry_after(auth_client, settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 2
    auth_client.get("/api/v2/me")
    auth_client.get("/api/v2/stores")
    response = auth_client.get("/api/v2/me")
    assert response.status_code == 429
    assert response.json()["code"] == "rate_limit_exceeded"
    # the clock stands 30 s into the window
    assert response["Retry-After"] == "30"
    assert response["X-RateLimit-Limit"] == "2"
    assert response["X-RateLimit-Remaining"] == "0"
    assert response["X-RateLimit-Reset"] == "30"


def test_budgets_are_per_credential(user, auth_client, client_for, settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 1
    auth_client.get("/api/v2/me")
    assert auth_client.get("/api/v2/me").status_code == 429
    assert client_for(make_api_key(user)).get("/api/v2/me").status_code == 200


@pytest.fixture
def limiter_outage_reset():
    """The limiter pauses after an outage (per process); no test after this one inherits it."""
    yield
    ratelimit._cache_unavailable_until = 0.0


def test_requests_are_served_when_redis_is_down(auth_client, settings, limiter_outage_reset):
    settings.API_RATE_LIMIT_PER_MINUTE = 1
    with override_settings(CACHES=dead_redis_caches()):
        responses = [auth_client.get("/api/v2/me") for _ in range(3)]
    assert [r.status_code for r in responses] == [200, 200, 200]
    assert "X-RateLimit-Limit" not in responses[0]


def test_an_outage_is_logged_once_per_pause(auth_client, caplog, limiter_outage_reset):
    with override_settings(CACHES=dead_redis_caches()):
        for _ in range(5):
            assert auth_client.get("/api/v2/me").status_code == 200
    warnings = [r for r in caplog.records if "rate limiter unavailable" in r.getMessage()]
    assert len(warnings) == 1


def test_limiting_resumes_after_the_pause(auth_client, settings, limiter_outage_reset):
    # given: an outage was noticed, and its pause has passed
    with override_settings(CACHES=dead_redis_caches()):
        auth_client.get("/api/v2/me")
    ratelimit._cache_unavailable_until = 0.0
    settings.API_RATE_LIMIT_PER_MINUTE = 1
    # when / then: Redis is back
    assert auth_client.get("/api/v2/me")["X-RateLimit-Limit"] == "1"
    assert auth_client.get("/api/v2/me").status_code == 429


def redis_client():
    from django.core.cache import cache

    return cache._cache.get_client(write=True)


def test_a_window_s_counter_expires_after_its_window(auth_client):
    auth_client.get("/api/v2/me")
    client = redis_client()
    (key,) = client.keys("*ratelimit:cred:*")
    # the window's 60 s and a 5 s margin: a counter never outlives its window for long
    assert 0 < client.ttl(key) <= ratelimit.WINDOW_SECONDS + 5
    assert int(client.get(key)) == 1


def test_counting_goes_on_after_redis_forgets_its_scripts(auth_client, settings):
    # given: the counting script is known to this process, and Redis restarted (scripts lost)
    settings.API_RATE_LIMIT_PER_MINUTE = 2
    auth_client.get("/api/v2/me")
    redis_client().script_flush()
    # then: the script is loaded again and the budget still counts
    assert auth_client.get("/api/v2/me")["X-RateLimit-Remaining"] == "0"
    assert auth_client.get("/api/v2/me").status_code == 429


def test_counting_goes_on_after_redis_closes_the_connections(auth_client, settings):
    # given: the process counts on its connection, and Redis closes every client connection
    # (as a restart does)
    settings.API_RATE_LIMIT_PER_MINUTE = 2
    auth_client.get("/api/v2/me")
    redis_client().client_kill_filter(_type="normal", skipme=False)
    # then: the next requests are counted on a new connection, within the same budget
    second = auth_client.get("/api/v2/me")
    assert second["X-RateLimit-Remaining"] == "0"
    assert auth_client.get("/api/v2/me").status_code == 429
