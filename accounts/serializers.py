from rest_framework import serializers


class MeSerializer(serializers.Serializer):
    id = serializers.CharField()
    username = serializers.CharField()
    email = serializers.CharField()
    credential_type = serializers.ChoiceField(choices=["api_key", "oauth"])


class PermissionsSerializer(serializers.Serializer):
    credential_type = serializers.ChoiceField(choices=["api_key", "oauth"])
    key_abilities = serializers.ListField(child=serializers.CharField())
    store_access = serializers.ChoiceField(choices=["all", "selected"])
    store_permissions = serializers.ListField(child=serializers.CharField())
    effective_abilities = serializers.ListField(child=serializers.CharField())
