"""Reads of the oauth area: the CLI application, installations, and access tokens' identities."""

import hashlib

from django.conf import settings
from django.db.models import Exists, OuterRef, Subquery
from django.utils import timezone
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_refresh_token_model,
)

from accounts.credentials import CREDENTIAL_OAUTH, Credential
from accounts.identity import Identity
from oauth_cli.models import Installation, TokenFamily


def token_checksum(raw: str) -> str:
    """How a token or code is stored and looked up: its SHA-256 (DOT's token_checksum, the
    Grant's `code` column, TokenFamily.code_checksum)."""
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def cli_application():
    """The one registered client, the official CLI; None before `ensure_cli_client` ran."""
    return get_application_model().objects.filter(client_id=settings.CLI_CLIENT_ID).first()


def cli_installation_for(*, user_id: int) -> Installation | None:
    """The user's installation of the CLI, with its application, in one query."""
    return (
        Installation.objects.select_related("application")
        .filter(user_id=user_id, application__client_id=settings.CLI_CLIENT_ID)
        .first()
    )


def live_token_owner(*, token: str, application_id: int) -> int | None:
    """The user id of a live token of the client: an unexpired access token, or a refresh
    token neither rotated nor revoked whose family is live. None for anything else."""
    now = timezone.now()
    lookup = {"token_checksum": token_checksum(token), "application_id": application_id}
    access_owner = (
        get_access_token_model()
        .objects.filter(**lookup, expires__gt=now)
        .values_list("user_id", flat=True)
        .first()
    )
    if access_owner is not None:
        return access_owner
    family_live = TokenFamily.objects.filter(
        pk=OuterRef("token_family"), revoked_at__isnull=True, expires_at__gt=now
    )
    return (
        get_refresh_token_model()
        .objects.filter(Exists(family_live), **lookup, revoked__isnull=True)
        .values_list("user_id", flat=True)
        .first()
    )


def access_token_identity(token_hash: str) -> Identity | None:
    """The identity of an OAuth access token (oauth_cli/authentication.py), by the token's
    checksum; an OAuth credential acts on a store only when X-STORE names it.

    Only a live, unexpired token of the CLI with scope `admin`, whose installation still
    exists, of an active user. Store membership is checked by stores.access.
    """
    # The installation is read by the same query (a subquery): one round trip and one ORM
    # compilation for the credential, not two.
    installation = Installation.objects.filter(
        user_id=OuterRef("user_id"), application_id=OuterRef("application_id")
    )
    access_token = (
        get_access_token_model()
        .objects.select_related("user", "application")
        .defer("user__password")
        .annotate(cli_installation_id=Subquery(installation.values("pk")[:1]))
        .filter(token_checksum=token_hash, expires__gt=timezone.now())
        .first()
    )
    if (
        access_token is None
        or access_token.user is None
        or not access_token.user.is_active
        or access_token.application is None
        or access_token.application.client_id != settings.CLI_CLIENT_ID
        or settings.OAUTH_SCOPE_ADMIN not in access_token.scope.split()
        or access_token.cli_installation_id is None
    ):
        return None
    credential = Credential(
        type=CREDENTIAL_OAUTH,
        user_id=access_token.user_id,
        abilities=("*",),
        store_access="all",
        rate_limit_key=f"oauth_installation:{access_token.cli_installation_id}",
        access_token_id=access_token.pk,
    )
    return Identity(
        user=access_token.user,
        credential=credential,
        token_hash=token_hash,
        expires_at=access_token.expires,
    )
