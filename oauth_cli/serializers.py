from rest_framework import serializers


class InstallationSerializer(serializers.Serializer):
    id = serializers.UUIDField(help_text="Installation id.")
    client_id = serializers.UUIDField(help_text="client_id of the official CLI.")
    grant_model = serializers.ChoiceField(choices=["account"])
    scopes = serializers.ListField(child=serializers.ChoiceField(choices=["admin"]))
    created_at = serializers.DateTimeField()


def installation_resource(installation) -> dict:
    return {
        "id": str(installation.id),
        "client_id": installation.application.client_id,
        "grant_model": "account",
        "scopes": ["admin"],
        "created_at": installation.created_at,
    }
