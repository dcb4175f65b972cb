"""System checks of the oauth area: CLI_CLIENT_ID must be a canonical UUID."""

import pytest
from django.core.checks import run_checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings


def _oauth_check_ids() -> list[str]:
    return [message.id for message in run_checks() if message.id.startswith("oauth_cli.")]


def test_default_client_id_passes():
    assert _oauth_check_ids() == []


@pytest.mark.parametrize(
    ("client_id", "check_id"),
    [
        ("not-a-uuid", "oauth_cli.E001"),
        ("", "oauth_cli.E001"),
        ("9B2C5F3E-4D1A-4C8E-9F6B-2A7D3E1C5B80", "oauth_cli.E002"),
        ("{9b2c5f3e-4d1a-4c8e-9f6b-2a7d3e1c5b80}", "oauth_cli.E002"),
        ("9b2c5f3e4d1a4c8e9f6b2a7d3e1c5b80", "oauth_cli.E002"),
    ],
)
def test_client_id_that_is_not_a_canonical_uuid_is_an_error(client_id, check_id):
    with override_settings(CLI_CLIENT_ID=client_id):
        assert _oauth_check_ids() == [check_id]
        with pytest.raises(SystemCheckError, match=check_id):
            call_command("check")
