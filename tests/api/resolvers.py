"""A test-only bearer resolver standing in for OAuth access tokens (`oauthtest-<user id>`), so
the foundation's OAuth rules (X-STORE required) are tested before the OAuth area lands."""

from accounts.credentials import CREDENTIAL_OAUTH, Credential
from accounts.models import User

PREFIX = "oauthtest-"


def credential_for_test_oauth_token(token: str, request):
    if not token.startswith(PREFIX):
        return None
    user = User.objects.filter(pk=int(token.removeprefix(PREFIX))).first()
    if user is None:
        return None
    return user, Credential(
        type=CREDENTIAL_OAUTH,
        user_id=user.pk,
        abilities=("*",),
        store_access="all",
        rate_limit_key=f"test-oauth:{user.pk}",
    )
