"""The request budget holds on every cache `make run` or production may use: Redis (counted in
one round trip) and the file cache of the zero-setup run."""

from types import SimpleNamespace

import pytest

from core.api import ratelimit

WINDOW_MIDDLE = 1_800_000_030.0  # 30 s into a window: a minute boundary cannot split a test


@pytest.fixture
def steady_clock(monkeypatch):
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(time=lambda: WINDOW_MIDDLE))


@pytest.mark.django_db
def test_the_budget_holds_on_redis(auth_client, settings, steady_clock):
    settings.API_RATE_LIMIT_PER_MINUTE = 2

    responses = [auth_client.get("/api/v2/me") for _ in range(3)]

    assert [r.status_code for r in responses] == [200, 200, 429]
    assert [r["X-RateLimit-Remaining"] for r in responses] == ["1", "0", "0"]


@pytest.mark.django_db
def test_the_budget_holds_on_the_file_cache(auth_client, settings, steady_clock, tmp_path):
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
