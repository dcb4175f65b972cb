"""Authorization codes are stored as their SHA-256, like the tokens (RFC 6819 §5.1.4.1.3): a read of
the table (a backup, a replica, the admin) yields no usable code."""

import importlib

from django.apps import apps
from django.db import connection
from django.utils import timezone
from oauth2_provider.models import Grant

from oauth_cli.selectors import token_checksum
from tests.oauth_cli.flow import approve, authorize_params, exchange, pkce_pair

hash_stored_codes = importlib.import_module(
    "oauth_cli.migrations.0002_hash_stored_authorization_codes"
).hash_stored_codes


def stored_grant_rows() -> list[tuple]:
    """Every column of every stored code, read past the ORM."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {Grant._meta.db_table}")
        return cursor.fetchall()


def test_the_code_row_holds_its_checksum_never_the_code(client, signed_in, user):
    verifier, challenge = pkce_pair()

    code = approve(signed_in, authorize_params(code_challenge=challenge))["code"]

    [row] = stored_grant_rows()
    assert not any(code in str(value) for value in row)
    assert Grant.objects.get(user=user).code == token_checksum(code)
    # and the code the CLI received still works, once
    assert exchange(client, code, verifier).status_code == 200
    assert stored_grant_rows() == []


def test_a_stored_clear_code_is_hashed_by_the_migration_and_still_works(client, signed_in, user):
    # given: a pending code stored in clear, as before the migration
    verifier, challenge = pkce_pair()
    code = approve(signed_in, authorize_params(code_challenge=challenge))["code"]
    Grant.objects.filter(user=user).update(code=code, updated=timezone.now())

    hash_stored_codes(apps, None)

    [row] = stored_grant_rows()
    assert not any(code in str(value) for value in row)
    assert exchange(client, code, verifier).status_code == 200
