"""The real service's official Python SDK (`sellapp-sdk`, the client our users already have)
driving our API as served in production: gunicorn with config/gunicorn.conf.py under
config.settings.production, on the suite's test database, over plain HTTP on loopback (as behind
a proxy that ends TLS)."""

from contextlib import contextmanager
from urllib.parse import quote

import pytest
from django.db import connection
from sellapp_sdk import SellAppClient

from tests.factories import MembershipFactory, StoreFactory, UserFactory, make_api_key
from tests.servers import Gunicorn


def _test_database_url() -> str:
    """The database pytest-django made for this run, which the server must read and write."""
    database = connection.settings_dict
    user = quote(database["USER"] or "", safe="")
    password = f":{quote(database['PASSWORD'], safe='')}" if database["PASSWORD"] else ""
    return (
        f"postgres://{user}{password}@{database['HOST'] or '127.0.0.1'}:{database['PORT']}"
        f"/{database['NAME']}"
    )


@contextmanager
def production_server(tmp_path_factory, django_db_blocker, **environment):
    """gunicorn under production settings on the test database; its base URL as the SDK takes
    it (…/api). `environment` adds to the production environment (an opt-in)."""
    log_path = tmp_path_factory.mktemp("sdk") / "gunicorn.log"
    with django_db_blocker.unblock():
        database_url = _test_database_url()
    with Gunicorn(
        log_path,
        workers=1,
        config_file=True,  # the worker class and threads docs/production.md's command has
        DATABASE_URL=database_url,
        ALLOWED_HOSTS="127.0.0.1",
        BASE_URL="https://api.example.com",
        # Each test makes a handful of calls; the limits are tested elsewhere.
        API_RATE_LIMIT_PER_MINUTE="100000",
        **environment,
    ) as server:
        yield f"{server.base}/api"


@pytest.fixture(scope="module")
def production_api(django_db_setup, django_db_blocker, tmp_path_factory):
    """The API under production settings."""
    with production_server(tmp_path_factory, django_db_blocker) as base_url:
        yield base_url


@pytest.fixture
def sdk_owner(transactional_db):
    """A user owning one store, with an API key of every ability."""
    user = UserFactory()
    store = StoreFactory()
    MembershipFactory(user=user, store=store, role="owner")
    return user, store, make_api_key(user)


@pytest.fixture
def sdk(production_api, sdk_owner) -> SellAppClient:
    """The SDK as an integration configures it: its API key and its store's slug."""
    _, store, key = sdk_owner
    # No retries: a test must see the first answer, not the SDK's retry of it.
    return SellAppClient(api_key=key, store=store.slug, base_url=production_api, max_retries=0)
