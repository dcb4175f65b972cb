"""System checks of the oauth area (`manage.py check`, run at every start)."""

import uuid

from django.conf import settings
from django.core.checks import Error, register


@register()
def cli_client_id_check(app_configs, **kwargs):
    """CLI_CLIENT_ID is compared as a string everywhere (authorize, validator, admin), so it
    must be a UUID in its canonical lower-case, hyphenated form (docs/design.md "Identifiers")."""
    value = getattr(settings, "CLI_CLIENT_ID", None)
    try:
        parsed = uuid.UUID(str(value))
    except ValueError:
        return [
            Error(
                f"CLI_CLIENT_ID must be a UUID, got {value!r}.",
                hint="Set the CLI_CLIENT_ID environment variable to the CLI's client id.",
                id="oauth_cli.E001",
            )
        ]
    if str(parsed) != value:
        return [
            Error(
                f"CLI_CLIENT_ID must be written as {str(parsed)!r}, got {value!r}.",
                hint="Use the lower-case, hyphenated form: client ids are compared exactly.",
                id="oauth_cli.E002",
            )
        ]
    return []
