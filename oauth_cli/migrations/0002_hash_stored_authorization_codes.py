"""Authorization codes are stored as their SHA-256 from now on (CliOAuth2Validator.
_create_authorization_code). The codes already stored in clear are hashed in place, so a
sign-in in progress during the deploy still completes; every code lives 10 minutes at most."""

import hashlib

from django.db import migrations
from oauth2_provider.settings import oauth2_settings


def hash_stored_codes(apps, schema_editor):
    grant_model = apps.get_model(*oauth2_settings.GRANT_MODEL.split("."))
    # oauthlib's codes are 30 characters: a 64-character value is already a checksum.
    for grant_id, code in grant_model.objects.values_list("pk", "code").iterator():
        if len(code) != 64:
            checksum = hashlib.sha256(code.encode("utf-8")).hexdigest()
            grant_model.objects.filter(pk=grant_id).update(code=checksum)


class Migration(migrations.Migration):
    dependencies = [
        ("oauth_cli", "0001_initial"),
        migrations.swappable_dependency(oauth2_settings.GRANT_MODEL),
    ]

    operations = [migrations.RunPython(hash_stored_codes, migrations.RunPython.noop)]
