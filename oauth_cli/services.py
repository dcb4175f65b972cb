"""Writes of the oauth area: registering the CLI, connecting and disconnecting, pruning."""

import logging
import uuid
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from oauth2_provider.models import (
    clear_expired,
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_refresh_token_model,
)

from oauth_cli.models import Installation, TokenFamily

logger = logging.getLogger(__name__)

# RFC 8252 §7.3: loopback IP literals, any port at request time (DOT ignores the port for
# these). `localhost` is deliberately absent (RFC 8252 §8.3).
CLI_REDIRECT_URIS = ("http://127.0.0.1/callback", "http://[::1]/callback")
CLI_APPLICATION_NAME = "Storefront CLI"


def cli_application_ensure():
    """Creates or repairs the one public CLI client; idempotent (`manage.py ensure_cli_client`)."""
    application_model = get_application_model()
    wanted = {
        "name": CLI_APPLICATION_NAME,
        "client_type": application_model.CLIENT_PUBLIC,
        "authorization_grant_type": application_model.GRANT_AUTHORIZATION_CODE,
        "redirect_uris": " ".join(CLI_REDIRECT_URIS),
        # A public client has no secret; the empty value makes a legacy `Basic client_id:`
        # credential compare equal (RFC 6749 §2.3.1), and any other secret fail.
        "client_secret": "",
        "hash_client_secret": False,
        "skip_authorization": False,
        "allowed_origins": "",
        "algorithm": application_model.NO_ALGORITHM,
    }
    with transaction.atomic():
        application = (
            application_model.objects.select_for_update()
            .filter(client_id=settings.CLI_CLIENT_ID)
            .first()
        )
        if application is None:
            return application_model.objects.create(client_id=settings.CLI_CLIENT_ID, **wanted)
        changed = [name for name, value in wanted.items() if getattr(application, name) != value]
        if changed:
            for name in changed:
                setattr(application, name, wanted[name])
            application.save()
        return application


def installation_ensure(*, user, application) -> Installation:
    """The user's one installation for the client (created at consent approval); get_or_create
    reads the one a concurrent approval created first."""
    return Installation.objects.get_or_create(user=user, application=application)[0]


def token_family_create(*, installation: Installation, family_id: uuid.UUID, code: str) -> None:
    from oauth_cli.selectors import token_checksum

    now = timezone.now()
    TokenFamily.objects.create(
        id=family_id,
        installation=installation,
        code_checksum=token_checksum(code),
        created_at=now,
        expires_at=now + timedelta(seconds=settings.OAUTH_TOKEN_FAMILY_SECONDS),
    )


def token_family_revoke(*, family_id: uuid.UUID) -> None:
    """Revokes every refresh token of the family and deletes its access tokens."""
    get_refresh_token_model().revoke_family(family_id)
    TokenFamily.objects.filter(pk=family_id, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )


def _revoke_user_client_tokens(*, user_id: int, application_id: int) -> None:
    now = timezone.now()
    get_grant_model().objects.filter(user_id=user_id, application_id=application_id).delete()
    get_refresh_token_model().objects.filter(
        user_id=user_id, application_id=application_id, revoked__isnull=True
    ).update(revoked=now, updated=now)
    get_access_token_model().objects.filter(user_id=user_id, application_id=application_id).delete()


def installation_revoke(*, installation_id: uuid.UUID) -> bool:
    """Disconnects: deletes the installation, its pending codes and every token family.

    The installation row is locked first, as token issuance does, so a code exchange racing
    a disconnect either finishes before it (and is revoked here) or finds no installation.
    """
    with transaction.atomic():
        installation = Installation.objects.select_for_update().filter(pk=installation_id).first()
        if installation is None:
            return False
        _revoke_user_client_tokens(
            user_id=installation.user_id, application_id=installation.application_id
        )
        installation.delete()
    return True


def installation_revoke_for_user(*, user_id: int, application_id: int) -> bool:
    installation = Installation.objects.filter(
        user_id=user_id, application_id=application_id
    ).first()
    if installation is None:
        # No connection left, but never leave tokens behind (e.g. after an admin delete).
        with transaction.atomic():
            _revoke_user_client_tokens(user_id=user_id, application_id=application_id)
        return False
    return installation_revoke(installation_id=installation.pk)


def oauth_prune(*, on_family: Callable[[], object] | None = None) -> int:
    """Deletes expired codes and tokens (DOT's `clear_expired`) and dead family records."""
    clear_expired()
    now = timezone.now()
    expired_families = list(
        TokenFamily.objects.filter(expires_at__lte=now).values_list("pk", flat=True)[:10000]
    )
    for family_id in expired_families:
        get_refresh_token_model().revoke_family(family_id)
        if on_family is not None:  # the command's progress bar
            on_family()
    deleted, _ = TokenFamily.objects.filter(pk__in=expired_families).delete()
    logger.info("pruned %d expired token families", deleted)
    return deleted
