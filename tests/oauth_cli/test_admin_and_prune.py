from datetime import timedelta

from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken, Grant, RefreshToken

from oauth_cli.models import Installation, TokenFamily
from oauth_cli.selectors import token_checksum
from oauth_cli.services import cli_application_ensure
from tests.admin_users import post_action, staff_client_with
from tests.oauth_cli.flow import approve, authorize_params


def test_ensure_cli_client_is_idempotent(settings, cli_application):
    from oauth2_provider.models import Application

    call_command("ensure_cli_client")
    call_command("ensure_cli_client")

    application = Application.objects.get()
    assert application.client_id == settings.CLI_CLIENT_ID
    assert application.client_type == "public"
    assert application.authorization_grant_type == "authorization-code"
    assert application.client_secret == ""
    assert set(application.redirect_uris.split()) == {
        "http://127.0.0.1/callback",
        "http://[::1]/callback",
    }


def test_ensure_cli_client_repairs_a_changed_client(cli_application):
    cli_application.redirect_uris = "http://localhost/callback"
    cli_application.skip_authorization = True
    cli_application.save()

    repaired = cli_application_ensure()

    assert "localhost" not in repaired.redirect_uris
    assert repaired.skip_authorization is False


def test_oauth_prune_deletes_expired_codes_tokens_and_families(signed_in, tokens):
    past = timezone.now() - timedelta(days=1)
    stale_code = approve(signed_in, authorize_params())["code"]
    Grant.objects.filter(code=token_checksum(stale_code)).update(expires=past)
    TokenFamily.objects.update(expires_at=past)

    call_command("oauth_prune")

    assert not Grant.objects.filter(code=token_checksum(stale_code)).exists()
    assert not TokenFamily.objects.exists()
    assert not AccessToken.objects.exists()
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()


def test_prune_task_is_scheduled_by_beat(settings):
    from config.celery import app
    from oauth_cli.tasks import oauth_prune_task

    entry = settings.CELERY_BEAT_SCHEDULE["oauth-prune"]
    assert entry["task"] == "oauth_cli.prune" == oauth_prune_task.name
    assert "oauth_cli.prune" in app.tasks


def test_prune_task_runs(tokens):
    from oauth_cli.tasks import oauth_prune_task

    TokenFamily.objects.update(expires_at=timezone.now() - timedelta(days=1))

    oauth_prune_task.run()  # the task body, in this test's transaction

    assert not TokenFamily.objects.exists()


def test_staff_see_installations_and_families(admin_client, tokens, user):
    installation = Installation.objects.get(user=user)
    family = TokenFamily.objects.get()

    listing = admin_client.get("/admin/oauth_cli/installation/")
    detail = admin_client.get(f"/admin/oauth_cli/installation/{installation.pk}/change/")
    families = admin_client.get("/admin/oauth_cli/tokenfamily/")

    assert listing.status_code == 200 and str(installation.pk) in listing.content.decode()
    assert detail.status_code == 200 and str(family.pk) in detail.content.decode()
    assert families.status_code == 200 and str(family.pk) in families.content.decode()


def test_staff_revoke_an_installation(admin_client, tokens, user):
    installation = Installation.objects.get(user=user)

    response = admin_client.post(
        "/admin/oauth_cli/installation/",
        {"action": "revoke_installations", "_selected_action": [str(installation.pk)]},
    )

    assert response.status_code == 302
    assert not Installation.objects.exists()
    assert not AccessToken.objects.exists()


def test_staff_revoke_a_token_family(admin_client, tokens):
    family = TokenFamily.objects.get()

    admin_client.post(
        "/admin/oauth_cli/tokenfamily/",
        {"action": "revoke_families", "_selected_action": [str(family.pk)]},
    )

    family.refresh_from_db()
    assert family.revoked_at is not None
    assert not AccessToken.objects.exists()
    api = Client()
    assert (
        api.get("/api/v2/me", HTTP_AUTHORIZATION=f"Bearer {tokens['access_token']}").status_code
        == 401
    )


INSTALLATIONS = "/admin/oauth_cli/installation/"
FAMILIES = "/admin/oauth_cli/tokenfamily/"


def test_view_only_staff_cannot_disconnect_an_installation(tokens, user):
    installation = Installation.objects.get(user=user)
    viewer = staff_client_with("oauth_cli.view_installation")
    assert viewer.get(INSTALLATIONS).status_code == 200

    post_action(viewer, INSTALLATIONS, "revoke_installations", [installation.pk])

    assert Installation.objects.filter(pk=installation.pk).exists()
    assert AccessToken.objects.exists()


def test_staff_with_the_delete_permission_disconnect_an_installation(tokens, user):
    installation = Installation.objects.get(user=user)
    editor = staff_client_with("oauth_cli.view_installation", "oauth_cli.delete_installation")

    post_action(editor, INSTALLATIONS, "revoke_installations", [installation.pk])

    assert not Installation.objects.exists()
    assert not AccessToken.objects.exists()


def test_view_only_staff_cannot_revoke_a_token_family(tokens):
    family = TokenFamily.objects.get()
    viewer = staff_client_with("oauth_cli.view_tokenfamily")
    assert viewer.get(FAMILIES).status_code == 200

    post_action(viewer, FAMILIES, "revoke_families", [family.pk])

    family.refresh_from_db()
    assert family.revoked_at is None
    api = Client()
    assert (
        api.get("/api/v2/me", HTTP_AUTHORIZATION=f"Bearer {tokens['access_token']}").status_code
        == 200
    )


def test_staff_with_the_change_permission_revoke_a_token_family(tokens):
    family = TokenFamily.objects.get()
    editor = staff_client_with("oauth_cli.view_tokenfamily", "oauth_cli.change_tokenfamily")

    post_action(editor, FAMILIES, "revoke_families", [family.pk])

    family.refresh_from_db()
    assert family.revoked_at is not None
    assert not AccessToken.objects.exists()
