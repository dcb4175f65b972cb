"""The account representation: it renders a mapping of the objects it reads from, so the field
list is declared here only: `{"user", "credential"}` for /me."""

from rest_framework import serializers

from accounts.credentials import CREDENTIAL_API_KEY, CREDENTIAL_OAUTH

CREDENTIAL_TYPES = [CREDENTIAL_API_KEY, CREDENTIAL_OAUTH]


class SortedStringsField(serializers.ListField):
    """Abilities and permissions are sets: sorted, answers are stable."""

    child = serializers.CharField()

    def to_representation(self, data):
        return super().to_representation(sorted(data))


class MeSerializer(serializers.Serializer):
    id = serializers.CharField(source="user.pk")
    username = serializers.CharField(source="user.username")
    email = serializers.CharField(source="user.email")
    credential_type = serializers.ChoiceField(choices=CREDENTIAL_TYPES, source="credential.type")


# OpenAPI example (spec "Current user"), used by accounts/views.py.
ME_EXAMPLE = {
    "id": "12",
    "username": "alice",
    "email": "alice@example.com",
    "credential_type": "api_key",
}
