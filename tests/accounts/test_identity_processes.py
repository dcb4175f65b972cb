"""The identity a process keeps (accounts/identity.py), on real processes: two gunicorn servers
(production settings, one sync worker each) keep the identity of a credential after its first
requests; a revoked key, a removed membership and a deactivated user are refused by the very next
request on each of them. The change is made by this test's process, as the admin or a shell would:
neither server made it.
"""

import os

import pytest
import requests
from django.db import connection
from django.utils import timezone

from accounts.models import ApiKey
from accounts.services import api_key_revoke
from stores.models import Membership
from tests.factories import MembershipFactory, make_api_key
from tests.servers import Gunicorn

pytestmark = pytest.mark.django_db(transaction=True)


def database_url() -> str:
    settings_dict = connection.settings_dict  # the test database
    return (
        f"postgres://{settings_dict['USER']}@{settings_dict['HOST']}:{settings_dict['PORT']}"
        f"/{settings_dict['NAME']}"
    )


@pytest.fixture(scope="module")
def servers(django_db_setup, django_db_blocker, tmp_path_factory):
    """Two web processes on the test database, whose cache is this process's Redis database
    (the epochs this process advances are the ones they read)."""
    workdir = tmp_path_factory.mktemp("identity-processes")
    environment = {
        "DATABASE_URL": database_url(),
        "REDIS_URL": os.environ["STOREFRONT_TEST_CACHE_URL"],
        "API_RATE_LIMIT_PER_MINUTE": "100000",
        "LOG_LEVEL": "WARNING",
    }
    with django_db_blocker.unblock():
        first = Gunicorn(workdir / "first.log", workers=1, **environment)
        second = Gunicorn(workdir / "second.log", workers=1, **environment)
        with first, second:
            yield first, second


def status(server: Gunicorn, secret: str, **headers) -> int:
    response = requests.get(
        f"{server.base}/api/v2/permissions",
        headers={"Authorization": f"Bearer {secret}", "Host": "127.0.0.1", **headers},
        timeout=30,
    )
    return response.status_code


def kept_by_both(servers, secret: str, **headers) -> None:
    """Three requests on each: read, confirmed, then answered from the process."""
    for server in servers:
        for _ in range(3):
            assert status(server, secret, **headers) == 200


def test_a_revoked_key_is_refused_by_the_next_request_on_every_process(servers, user, store):
    secret = make_api_key(user)
    kept_by_both(servers, secret)
    # the processes answer from what they kept: a write that advances no epoch goes unseen
    ApiKey.objects.filter(user=user).update(revoked_at=timezone.now())
    assert [status(server, secret) for server in servers] == [200, 200]

    api_key_revoke(api_key=ApiKey.objects.get(user=user))  # advances the key's epoch

    assert [status(server, secret) for server in servers] == [401, 401]


def test_a_removed_membership_is_refused_by_the_next_request_on_every_process(servers, user, store):
    second = MembershipFactory(user=user).store
    secret = make_api_key(user)
    kept_by_both(servers, secret, **{"X-STORE": second.slug})

    Membership.objects.get(user=user, store=second).delete()

    assert [status(server, secret, **{"X-STORE": second.slug}) for server in servers] == [
        403,
        403,
    ]
    assert [status(server, secret, **{"X-STORE": store.slug}) for server in servers] == [
        200,
        200,
    ]


def test_a_deactivated_user_is_refused_by_the_next_request_on_every_process(servers, user, store):
    secret = make_api_key(user)
    kept_by_both(servers, secret)

    user.is_active = False
    user.save()

    assert [status(server, secret) for server in servers] == [401, 401]
