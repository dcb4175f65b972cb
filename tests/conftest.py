import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from config.api import ratelimit
from tests.factories import MembershipFactory, StoreFactory, UserFactory, make_api_key


@pytest.fixture(autouse=True)
def _clear_cache():
    """Rate-limit counters live in Redis; each test starts with fresh budgets, and without the
    limiter's pause left by a simulated Redis outage in an earlier test."""
    ratelimit._cache_unavailable_until = 0.0
    cache.clear()
    yield


@pytest.fixture
def api_client():
    return APIClient()


@pytest.fixture
def user(db):
    return UserFactory()


@pytest.fixture
def store(user):
    return MembershipFactory(user=user).store


@pytest.fixture
def api_key(user, store):
    return make_api_key(user)


@pytest.fixture
def auth_client(api_key):
    """A client authenticated with an all-abilities API key of `user`, owner of `store`."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key}")
    return client


@pytest.fixture
def other_store(db):
    """A store of another user: nothing of it may be visible to `user`."""
    return StoreFactory()


@pytest.fixture
def client_for():
    """`client_for(secret, **headers)`: an APIClient sending `Authorization: Bearer <secret>`."""

    def make(secret, **headers):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}", **headers)
        return client

    return make
