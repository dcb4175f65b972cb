"""The request budget holds on every cache `make run` or production may use: Redis (counted in
one round trip) and the file cache of the zero-setup run."""

import pytest

# Every test runs on the rate limiter's stopped clock (tests/conftest.py), 30 s into a window: a
# minute boundary cannot split a test.


@pytest.mark.django_db
def test_the_budget_holds_on_redis(auth_client, settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 2

    responses = [auth_client.get("/api/v2/me") for _ in range(3)]

    assert [r.status_code for r in responses] == [200, 200, 429]
    assert [r["X-RateLimit-Remaining"] for r in responses] == ["1", "0", "0"]


@pytest.mark.django_db
def test_the_budget_holds_on_the_file_cache(auth_client, settings, tmp_path):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(tmp_path),
        }
    }
    settings.API_RATE_LIMIT_PER_MINUTE = 2

    responses = [auth_client.get("/api/v2/me") for _ in range(3)]

    assert [r.status_code for r in responses] == [200, 200, 429]
    assert [r["X-RateLimit-Remaining"] for r in responses] == ["1", "0", "0"]
