"""django-oauth-toolkit customised for the official CLI (OAUTH2_VALIDATOR_CLASS).

Each hook is small and names the rule it enforces; DOT's flow and models stay as they are.
"""

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone
from oauth2_provider.models import (
    get_grant_model,
    get_refresh_token_model,
    refresh_token_expire_timedelta,
)
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749 import errors

from oauth_cli.models import Installation, TokenFamily
from oauth_cli.selectors import live_token_owner, token_checksum
from oauth_cli.services import (
    installation_ensure,
    installation_revoke_for_user,
    token_family_create,
    token_family_revoke,
)


class _TokenReplayed(Exception):
    """Raised inside the issuing transaction; the revocation must happen outside it."""

    def __init__(self, family_id):
        self.family_id = family_id


class CliOAuth2Validator(OAuth2Validator):
    def _load_application(self, client_id, request):
        """Only the official CLI is a client; any other id is `invalid_client`."""
        if client_id != settings.CLI_CLIENT_ID:
            return None
        return super()._load_application(client_id, request)

    def authenticate_client(self, request, *args, **kwargs):
        """RFC 6749 §2.3.1: a legacy `Basic client_id:` credential, when sent, must itself be
        right; a failed one does not fall back to the body's client_id."""
        if self._extract_basic_auth(request):
            return self._authenticate_basic_auth(request)
        return self._authenticate_request_body(request)

    def validate_code(self, client_id, code, client, request, *args, **kwargs):
        """RFC 6749 §4.1.2 / RFC 9700 §4.5: a code is single-use; on replay the authorization
        server SHOULD revoke the tokens issued from it, which we do. RFC 6749 §5.2
        `invalid_grant` also when its user was deactivated since the consent."""
        grant = (
            get_grant_model()
            .objects.filter(code=token_checksum(code), application=client)
            .select_related("user")
            .first()
        )
        if grant is not None and not grant.user.is_active:
            return False  # deactivated since consent: refused, the code simply expires
        if grant is not None and not grant.is_expired():
            # Later hooks read this copy: a concurrent exchange may delete the row meanwhile,
            # and the consuming DELETE in _save_bearer_token then settles who won.
            request.cli_grant = grant
            request.scopes = grant.scope.split(" ")
            request.user = grant.user
            return True
        if grant is not None:
            return False
        family = TokenFamily.objects.filter(code_checksum=token_checksum(code)).first()
        if family is not None:
            token_family_revoke(family_id=family.pk)
        return False

    def save_authorization_code(self, client_id, code, request, *args, **kwargs):
        """The user's Installation is created with the code, in one transaction, and only when
        a code is issued: a refused or failed approval leaves no connection without tokens."""
        with transaction.atomic():
            super().save_authorization_code(client_id, code, request, *args, **kwargs)
            installation_ensure(user=request.user, application=request.client)

    def _create_authorization_code(self, request, code):
        """RFC 6819 §5.1.4.1.3 (no cleartext credentials): the row stores the code's SHA-256
        in DOT's `code` column, as DOT stores tokens under COMPLIANT_BCP_RFC9700_TOKEN_STORAGE,
        and every lookup hashes the presented code. oauthlib keeps the raw `code` for the
        redirect; only the row gets the hash."""
        return super()._create_authorization_code(
            request, {**code, "code": token_checksum(code["code"])}
        )

    def get_authorization_code_scopes(self, client_id, code, redirect_uri, request):
        """DOT's, by the stored checksum. Only the OpenID Connect server asks this and the
        nonce below (OIDC is off): hashed, they stay right if it is ever turned on."""
        return super().get_authorization_code_scopes(
            client_id, token_checksum(code), redirect_uri, request
        )

    def get_authorization_code_nonce(self, client_id, code, redirect_uri, request):
        return super().get_authorization_code_nonce(
            client_id, token_checksum(code), redirect_uri, request
        )

    def get_code_challenge(self, code, request):
        return request.cli_grant.code_challenge or None

    def get_code_challenge_method(self, code, request):
        return request.cli_grant.code_challenge_method or None

    def confirm_redirect_uri(self, client_id, code, redirect_uri, client, request, *args, **kwargs):
        """RFC 6749 §4.1.3: identical to the redirect_uri of the authorization request."""
        return request.cli_grant.redirect_uri_allowed(redirect_uri)

    def invalidate_authorization_code(self, client_id, code, request, *args, **kwargs):
        """The code was already consumed inside the issuing transaction (_save_bearer_token)."""

    def validate_refresh_token(self, refresh_token, client, request, *args, **kwargs):
        """DOT's rotation and reuse protection, plus the family's absolute 90-day lifetime and
        a revoked family (code replay, disconnect)."""
        if self._accept_live_refresh_token(refresh_token, client, request):
            return True
        # Not a live, valid token: DOT's rules decide (grace period, reuse protection).
        valid = super().validate_refresh_token(refresh_token, client, request, *args, **kwargs)
        rt = getattr(request, "refresh_token_instance", None)
        if not valid or rt is None:
            self._mark_family_revoked(refresh_token)
            return False
        family = TokenFamily.objects.filter(pk=rt.token_family).first()
        if family is None or not family.is_live:
            token_family_revoke(family_id=rt.token_family)
            return False
        # A deactivated user is refused, not disconnected: reactivation restores the CLI.
        return rt.user.is_active

    def _accept_live_refresh_token(self, refresh_token, client, request) -> bool:
        """The common case in one query: an unrevoked token of this client, with its access
        token (DOT's sliding expiry), its user (active) and its family (live). True only when
        every rule of the slow path above would accept it, with the same request attributes;
        anything else returns False and the slow path decides, with its side effects.
        One query where the slow path makes several (docs/benchmarks/oauth.md)."""
        family_live = TokenFamily.objects.filter(
            pk=OuterRef("token_family"), revoked_at__isnull=True, expires_at__gt=timezone.now()
        )
        rt = (
            get_refresh_token_model()
            .objects.filter(token_checksum=token_checksum(refresh_token), revoked__isnull=True)
            .select_related("access_token", "user")
            .annotate(family_live=Exists(family_live))
            .first()
        )
        # The client is compared here, not in SQL: every token has the CLI's application_id,
        # and a planner misled by it would scan that index instead of the checksum's.
        if (
            rt is None
            or rt.application_id != client.pk
            or rt.access_token is None
            or not rt.family_live
            or not rt.user.is_active
        ):
            return False
        expire_delta = refresh_token_expire_timedelta()
        if expire_delta and rt.access_token.expires + expire_delta <= timezone.now():
            return False
        rt.application = client
        request.user = rt.user
        request.refresh_token = refresh_token
        request.refresh_token_instance = rt
        return True

    def _mark_family_revoked(self, refresh_token):
        """DOT revoked the family of a reused token; record it on our family row too."""
        families = (
            get_refresh_token_model()
            .objects.filter(token_checksum=token_checksum(refresh_token), revoked__isnull=False)
            .values("token_family")
        )
        TokenFamily.objects.filter(pk__in=families, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )

    def save_bearer_token(self, token, request, *args, **kwargs):
        try:
            return super().save_bearer_token(token, request, *args, **kwargs)
        except _TokenReplayed as replay:
            # Lost a race with another exchange of the same code or refresh token: that is a
            # replay, so the family is revoked (RFC 9700 §4.14.2) and nothing is issued here.
            if replay.family_id is not None:
                token_family_revoke(family_id=replay.family_id)
            raise errors.InvalidGrantError(
                description="The grant was already used.", request=request
            ) from None

    def _save_bearer_token(self, token, request, *args, **kwargs):
        """Runs in DOT's issuing transaction. Locks the installation (a concurrent disconnect
        waits or wins), then consumes the code or re-checks the refresh token under its row
        lock, so at most one successor is ever issued per code or refresh token."""
        installation = _locked_installation(
            user_id=request.user.pk, application_id=request.client.pk
        )
        if installation is None:
            raise errors.InvalidGrantError(
                description="The CLI connection was revoked.", request=request
            )
        request.installation = installation
        if request.grant_type == "authorization_code":
            consumed, _ = (
                get_grant_model()
                .objects.filter(code=token_checksum(request.code), application=request.client)
                .delete()
            )
            if not consumed:
                family = TokenFamily.objects.filter(
                    code_checksum=token_checksum(request.code)
                ).first()
                raise _TokenReplayed(family.pk if family else None)
        elif request.grant_type == "refresh_token":
            # DOT's rotation would revoke a token a concurrent refresh already revoked as if
            # it were live, and issue a second successor: under the row lock, that is reuse.
            current = (
                get_refresh_token_model()
                .objects.select_for_update()
                .get(pk=request.refresh_token_instance.pk)
            )
            if current.revoked is not None:
                raise _TokenReplayed(current.token_family)
        return super()._save_bearer_token(token, request, *args, **kwargs)

    def _create_refresh_token(self, request, refresh_token_code, access_token, previous):
        refresh_token = super()._create_refresh_token(
            request, refresh_token_code, access_token, previous
        )
        if previous is None:
            token_family_create(
                installation=request.installation,
                family_id=refresh_token.token_family,
                code=request.code,
            )
        return refresh_token

    def revoke_token(self, token, token_type_hint, request, *args, **kwargs):
        """RFC 7009, widened: revoking a live token of the CLI disconnects its installation
        (all token families). A token that is unknown, expired, rotated or revoked revokes
        nothing (RFC 7009 §2.2: the endpoint still answers 200): a stale token kept on one
        machine must not disconnect the families other machines hold."""
        application_pk = getattr(request.client, "pk", None)
        if application_pk is None or not token:
            return
        owner = live_token_owner(token=token, application_id=application_pk)
        if owner is not None:
            installation_revoke_for_user(user_id=owner, application_id=application_pk)


def _locked_installation(*, user_id: int, application_id: int) -> Installation | None:
    """The user's installation, row-locked until the transaction ends."""
    return (
        Installation.objects.select_for_update()
        .filter(user_id=user_id, application_id=application_id)
        .first()
    )
