from django.conf import settings
from rest_framework import serializers

# The one grant model (spec "OAuth installation": a grant covers the account's stores).
GRANT_MODEL = "account"


class ConstantField(serializers.ChoiceField):
    """A value that is the same for every installation (one client, one grant model, one
    scope): rendered as is, and stated in the schema as the enum of that one value."""

    def __init__(self, value, **kwargs):
        self.value = value
        super().__init__(choices=[value], **kwargs)

    def to_representation(self, instance):
        return self.value


class ConstantListField(serializers.ListField):
    """The one-element list of its `child`, a ConstantField."""

    def __init__(self, **kwargs):
        super().__init__(source="*", **kwargs)

    def to_representation(self, instance):
        return [self.child.value]


# Renders an oauth_cli.models.Installation, its application selected with it.
class InstallationSerializer(serializers.Serializer):
    id = serializers.UUIDField(help_text="Installation id.")
    client_id = serializers.UUIDField(
        source="application.client_id", help_text="client_id of the official CLI."
    )
    grant_model = ConstantField(GRANT_MODEL, source="*")
    scopes = ConstantListField(child=ConstantField(settings.OAUTH_SCOPE_ADMIN))
    created_at = serializers.DateTimeField()


# OpenAPI example (spec "OAuth installation (v2)"), used by oauth_cli/api_views.py.
INSTALLATION_EXAMPLE = {
    "id": "5f1d2c3b-8a7e-4b6c-9d0e-1f2a3b4c5d6e",
    "client_id": settings.CLI_CLIENT_ID,
    "grant_model": "account",
    "scopes": ["admin"],
    "created_at": "2026-06-01T09:00:00Z",
}
