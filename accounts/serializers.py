"""The account representations. Each renders a mapping of the objects it reads from, so the
field list is declared here only: `{"user", "credential"}` for /me, `{"credential",
"store_context", "role_permissions"}` for /permissions."""

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


class PermissionsSerializer(serializers.Serializer):
    credential_type = serializers.ChoiceField(choices=CREDENTIAL_TYPES, source="credential.type")
    key_abilities = SortedStringsField(source="credential.abilities")
    store_access = serializers.ChoiceField(
        choices=["all", "selected"], source="credential.store_access"
    )
    store_permissions = SortedStringsField(source="role_permissions")
    effective_abilities = SortedStringsField(source="store_context.effective_abilities")


# OpenAPI examples (spec "Current user" and "Permissions"), used by accounts/views.py.
ME_EXAMPLE = {
    "id": "12",
    "username": "alice",
    "email": "alice@example.com",
    "credential_type": "api_key",
}
PERMISSIONS_EXAMPLE = {
    "credential_type": "api_key",
    "key_abilities": ["account:read", "coupon", "invoice:read"],
    "store_access": "all",
    "store_permissions": ["coupon:read", "coupon:write", "invoice:read", "invoice:write"],
    "effective_abilities": ["account:read", "coupon:read", "coupon:write", "invoice:read"],
}
