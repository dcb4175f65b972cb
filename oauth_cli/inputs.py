"""The protocol endpoints' inputs read length first (core/api/fields.py, docs/api/hardening.md
"Length first"): oauthlib and our rules parse the forms and queries, so their lengths are
checked before either runs, against the bounds the serializers of oauth_cli/serializers.py
state in the schema.
"""

from core.api.fields import (
    AUTHORIZATION_MAX_LENGTH,
    PARAMETER_MAX_LENGTH,
    overlong_parameters,
    too_long_message,
)
from oauth_cli.serializers import (
    AuthorizationCodeGrantSerializer,
    AuthorizeQuerySerializer,
    ConsentApprovalFormSerializer,
    RefreshTokenGrantSerializer,
    RevocationSerializer,
)

# Each parameter's bound is the one its serializer states in the schema; one none bounds (state,
# a code, a token, one oauthlib reads unasked) gets PARAMETER_MAX_LENGTH.
AUTHORIZE_QUERY_FIELDS = AuthorizeQuerySerializer().fields
CONSENT_FORM_FIELDS = ConsentApprovalFormSerializer().fields
TOKEN_FORM_FIELDS = {
    **AuthorizationCodeGrantSerializer().fields,
    **RefreshTokenGrantSerializer().fields,
}
REVOKE_FORM_FIELDS = RevocationSerializer().fields


def overlong_in_forms(fields, *forms) -> dict[str, int]:
    """{name: limit} of the parameters of `forms` (QueryDicts) over their bound."""
    overlong = {}
    for form in forms:
        overlong |= overlong_parameters(
            dict(form.lists()), fields, default_limit=PARAMETER_MAX_LENGTH
        )
    return overlong


def overlong_input(request, fields, *forms, authorization: bool = False) -> str | None:
    """Why a parameter of `forms` (QueryDicts), or the Authorization header where the endpoint
    reads it, is too long to be read further, or None. Checked before any other rule of the
    endpoint, ours or oauthlib's."""
    if authorization and len(request.headers.get("Authorization", "")) > AUTHORIZATION_MAX_LENGTH:
        return too_long_message("The Authorization header", AUTHORIZATION_MAX_LENGTH)
    overlong = overlong_in_forms(fields, *forms)
    return too_long_message(*next(iter(overlong.items()))) if overlong else None
