import pytest

from tests.factories import MembershipFactory, UserFactory, make_api_key


@pytest.fixture
def other_client(other_store, client_for):
    """An all-abilities key of another user, owner of `other_store` only."""
    owner = UserFactory()
    MembershipFactory(user=owner, store=other_store)
    return client_for(make_api_key(owner))
