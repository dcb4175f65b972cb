"""The OAuth protocol endpoints in /api/schema/ (spec "Discovery and OAuth protocol").

They are django-oauth-toolkit and Django views, not DRF views, so drf-spectacular cannot derive
them: `oauth_protocol_paths` (a SPECTACULAR_SETTINGS POSTPROCESSING_HOOKS entry) adds their
OpenAPI description, written from what the views answer (docs/api/oauth.md, tests/oauth_cli):
form bodies, the `{error, error_description}` object of RFC 6749 §5.2, redirects, the consent
page, and the business envelope on 429 and 500.
"""

from django.conf import settings

from config.api.pagination import EXAMPLE_BASE_URL
from config.api.schema import RATE_LIMIT_RESPONSE_HEADERS
from oauth_cli.authorize import CODE_CHALLENGE_PATTERN
from oauth_cli.views import discovery_document

TAG = "oauth"
FORM = "application/x-www-form-urlencoded"
ENVELOPE_REF = {"$ref": "#/components/schemas/ErrorEnvelope"}
OAUTH_ERROR_REF = {"$ref": "#/components/schemas/OAuthError"}
# 1..65535, as `authorize.loopback_redirect_uri_problem` requires (RFC 8252 §7.3).
_PORT = r"([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
LOOPBACK_REDIRECT_URI_PATTERN = rf"^http://(127\.0\.0\.1|\[::1\]):{_PORT}/callback$"
# RFC 7636 §4.1: 43 to 128 unreserved characters.
CODE_VERIFIER_PATTERN = r"^[A-Za-z0-9._~-]{43,128}$"
# Django's CSRF token: the 32-character secret or its 64-character masked form.
CSRF_TOKEN_PATTERN = r"^[A-Za-z0-9]{32}([A-Za-z0-9]{32})?$"


def _header(schema: dict, description: str, required: bool = True) -> dict:
    return {"schema": schema, "description": description, "required": required}


# What the 429 headers mean here: the budget is per client IP and endpoint, not per credential.
_RATE_LIMIT_HEADER_DESCRIPTIONS = {
    "Retry-After": "Seconds to wait before retrying.",
    "X-RateLimit-Limit": "Requests per minute from one client IP to this endpoint.",
    "X-RateLimit-Remaining": "Requests left in the current window (0).",
    "X-RateLimit-Reset": "Not sent by the protocol endpoints.",
}


def _rate_limit_headers() -> dict:
    """The 429 headers every operation declares (config.api.schema, same types and required
    flags), for the protocol endpoints' budget (oauth_cli.views.rate_limited_response)."""
    return {
        parameter.name: _header(
            parameter.type, _RATE_LIMIT_HEADER_DESCRIPTIONS[parameter.name], parameter.required
        )
        for parameter in RATE_LIMIT_RESPONSE_HEADERS
    }


NO_STORE = _header({"type": "string", "enum": ["no-store"]}, "Never cached.")
NO_CACHE_PRAGMA = _header({"type": "string", "enum": ["no-cache"]}, "HTTP/1.0 no-cache.")
LOCATION = _header({"type": "string"}, "Where the browser goes next.")


def _examples(**values) -> dict:
    """An OpenAPI `examples` map: each keyword is an example's name, with its value."""
    return {
        name: {"summary": name.replace("_", " "), "value": value} for name, value in values.items()
    }


def _json(
    schema: dict, description: str, headers: dict | None = None, examples: dict | None = None
) -> dict:
    response = {"description": description, "content": {"application/json": {"schema": schema}}}
    if examples:
        response["content"]["application/json"]["examples"] = examples
    if headers:
        response["headers"] = headers
    return response


def _common_errors() -> dict:
    """429 and 500 are the business envelope on every protocol endpoint (spec "Errors" 3)."""
    return {
        "429": {
            **_json(ENVELOPE_REF, "Too many requests from this client IP (business envelope)."),
            "headers": _rate_limit_headers(),
        },
        "500": _json(ENVELOPE_REF, "Server error (business envelope)."),
    }


# A body over DATA_UPLOAD_MAX_MEMORY_SIZE, refused before the view (config.api.middleware):
# the OAuth error object on the protocol endpoints, the 413 page on the consent form.
TOO_LARGE = _json(OAUTH_ERROR_REF, "`invalid_request`: the body is over 2.5 MiB.")
TOO_LARGE_PAGE = {
    "description": "The body is over 2.5 MiB: the 413 page.",
    "content": {"text/html": {"schema": {"type": "string"}}},
}


def _protocol_error(description: str, *, html: bool = False, headers: dict | None = None):
    """`{error, error_description}`; the authorization endpoint shows it as a page instead when
    the request's Accept contains text/html (a browser)."""
    response = _json(OAUTH_ERROR_REF, description, headers)
    if html:
        response["content"]["text/html"] = {"schema": {"type": "string"}}
    return response


def _malformed_or_protocol_error(description: str, *, html: bool = False) -> dict:
    """400: a protocol error, or the envelope's `bad_request` when Django cannot parse the form
    body at all (a multipart body without a boundary), before the view runs."""
    response = _protocol_error(description, html=html)
    response["content"]["application/json"]["schema"] = {"oneOf": [OAUTH_ERROR_REF, ENVELOPE_REF]}
    return response


def _ref(component: str) -> dict:
    return {"$ref": f"#/components/schemas/{component}"}


def _form_operation(
    operation_id: str,
    summary: str,
    description: str,
    body: dict,
    security,
    responses,
    examples: dict,
) -> dict:
    """An operation whose required body is an HTML form (application/x-www-form-urlencoded)."""
    return {
        "operationId": operation_id,
        "summary": summary,
        "description": description,
        "tags": [TAG],
        "security": security,
        "requestBody": {
            "required": True,
            "content": {FORM: {"schema": body, "examples": examples}},
        },
        "responses": responses,
    }


# Example values (spec "Discovery and OAuth protocol", docs/api/oauth.md); the codes, tokens
# and verifier below are made up, in the shapes the endpoints issue and accept.
EXAMPLE_STATE = "st-5b1f9c2a"
EXAMPLE_CODE = "Xq3vN8pLmT2rK7wYc4hJ9sD1fG6bZ0aE"
EXAMPLE_CODE_VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk-cli-example"
EXAMPLE_ACCESS_TOKEN = "Jd8x2LpQ7vR4mN9tK3wZ6yH1cF5bG0aS"
EXAMPLE_REFRESH_TOKEN = "Rt4kP9zW2qL7xN3mV8cJ5yB1hD6fG0sA"
EXAMPLE_AUTH_TOKEN = "a3f1c9e7b5d2468097ab1cd2ef3456789"
# A CSRF token's shape (64 characters, masked form); the real one comes from the page.
EXAMPLE_CSRF_TOKEN = "kE3nR8sT1vW6yZ0bD4fH7jL2mP5qS9uXaC3eG6iK8oM1rT4vY7zB0dF2hJ5lN8pQ"
EXAMPLE_REDIRECT_URI = "http://127.0.0.1:53682/callback"


def _metadata_property(value) -> dict:
    """A discovery document field's schema, from the value the view answers: the URLs, the
    supported-value lists (each as the enum of what it lists) and RFC 9207's flag."""
    if isinstance(value, bool):
        return {"type": "boolean", "enum": [value]}
    if isinstance(value, list):
        return {"type": "array", "items": {"type": "string", "enum": value}}
    return {"type": "string", "format": "uri"}


def _schemas() -> dict:
    cli = settings.CLI_CLIENT_ID
    metadata = discovery_document(EXAMPLE_BASE_URL)
    client_id = {
        "type": "string",
        "format": "uuid",
        "enum": [cli],
        "description": "The official CLI's client id, the only registered client; any other "
        "is `invalid_client`.",
    }
    public_client_id = {
        **client_id,
        "description": "The public client's id; or send it as legacy Basic auth.",
    }

    def grant(grant_type: str, description: str, **fields) -> dict:
        """A token request body: every field of the grant is required; client_id is not."""
        return {
            "type": "object",
            "description": description,
            "properties": {
                "grant_type": {"type": "string", "enum": [grant_type]},
                "client_id": public_client_id,
                **fields,
            },
            "required": ["grant_type", *fields],
        }

    return {
        "OAuthError": {
            "type": "object",
            "description": "RFC 6749 §5.2 error object; `error_description` may be absent.",
            "properties": {
                "error": {"type": "string", "example": "invalid_request"},
                "error_description": {"type": "string"},
            },
            "required": ["error"],
        },
        "AuthorizationServerMetadata": {
            "type": "object",
            "description": "RFC 8414 authorization server metadata.",
            "properties": {name: _metadata_property(value) for name, value in metadata.items()},
            "required": list(metadata),
        },
        "ConsentApprovalForm": {
            "type": "object",
            "description": "The consent page's Approve form; with `_method=DELETE` it refuses.",
            "properties": {
                "auth_token": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The single-use token of the consent page this answers.",
                },
                "client_id": {**client_id, "description": "Required to approve."},
                "state": {"type": "string", "minLength": 1, "description": "Required to approve."},
                "_token": {"type": "string", "pattern": CSRF_TOKEN_PATTERN, "description": "CSRF."},
                "_method": {
                    "type": "string",
                    "enum": ["DELETE"],
                    "description": "Refuse instead of approve (the page's Refuse button).",
                },
            },
            "required": ["auth_token", "_token"],
        },
        "ConsentRefusalForm": {
            "type": "object",
            "properties": {
                "auth_token": {"type": "string", "minLength": 1},
                "client_id": {**client_id, "description": "Optional; checked when given."},
                "state": {"type": "string", "minLength": 1},
                "_token": {"type": "string", "pattern": CSRF_TOKEN_PATTERN, "description": "CSRF."},
            },
            "required": ["auth_token", "_token"],
        },
        "AuthorizationCodeTokenRequest": grant(
            "authorization_code",
            "RFC 6749 §4.1.3 with PKCE (RFC 7636 §4.5).",
            code={"type": "string", "minLength": 1},
            redirect_uri={"type": "string", "pattern": LOOPBACK_REDIRECT_URI_PATTERN},
            code_verifier={"type": "string", "pattern": CODE_VERIFIER_PATTERN},
        ),
        "RefreshTokenRequest": grant(
            "refresh_token",
            "RFC 6749 §6; the refresh token rotates.",
            refresh_token={"type": "string", "minLength": 1},
        ),
        "TokenResponse": {
            "type": "object",
            "properties": {
                "access_token": {"type": "string"},
                "token_type": {"type": "string", "enum": ["Bearer"]},
                "expires_in": {
                    "type": "integer",
                    "description": "Seconds until the access token expires.",
                },
                "scope": {"type": "string", "enum": [settings.OAUTH_SCOPE_ADMIN]},
                "refresh_token": {"type": "string"},
            },
            "required": ["access_token", "token_type", "expires_in", "scope", "refresh_token"],
        },
        "RevocationRequest": {
            "type": "object",
            "description": "RFC 7009 §2.1; a live token of the CLI disconnects the installation "
            "(every token family); a stale one (expired, rotated, revoked) revokes nothing.",
            "properties": {
                "client_id": public_client_id,
                "token": {"type": "string", "minLength": 1},
                "token_type_hint": {
                    "type": "string",
                    "example": "refresh_token",
                    "description": "A hint only: unknown values are ignored.",
                },
            },
            "required": ["token"],
        },
    }


def _authorize_query_parameters() -> list[dict]:
    def query(name: str, schema: dict, description: str, required: bool = True) -> dict:
        return {
            "name": name,
            "in": "query",
            "required": required,
            "schema": schema,
            "description": description,
        }

    return [
        query("response_type", {"type": "string", "enum": ["code"]}, "Authorization code flow."),
        query(
            "client_id",
            {"type": "string", "format": "uuid", "enum": [settings.CLI_CLIENT_ID]},
            "The CLI's client id; any other is `invalid_client` (400, not redirected).",
        ),
        query(
            "redirect_uri",
            {"type": "string", "pattern": LOOPBACK_REDIRECT_URI_PATTERN},
            "The CLI's loopback callback, any port (RFC 8252 §7.3); `localhost` is refused.",
        ),
        query(
            "scope",
            {"type": "string", "enum": [settings.OAUTH_SCOPE_ADMIN]},
            "Defaults to admin.",
            required=False,
        ),
        query("state", {"type": "string", "minLength": 1}, "Returned with the code."),
        query(
            "code_challenge",
            {
                "type": "string",
                "minLength": 43,
                "maxLength": 43,
                "pattern": CODE_CHALLENGE_PATTERN.pattern,
            },
            "BASE64URL(SHA-256(code_verifier)) without padding (RFC 7636 §4.2).",
        ),
        query("code_challenge_method", {"type": "string", "enum": ["S256"]}, "PKCE method."),
    ]


def _authorize_answer_responses() -> dict:
    """What POST (approve) and DELETE (refuse) answer."""
    return {
        "303": {
            "description": "Back to the CLI's callback: `code` and `state` (approved), or "
            "`error=access_denied` and `state` (refused); both with `iss`, the issuer "
            "(RFC 9207).",
            "headers": {"Location": LOCATION, "Cache-Control": NO_STORE},
        },
        "400": _malformed_or_protocol_error(
            "`invalid_request`: unknown, used or expired `auth_token`, another user's, or a "
            "`client_id`/`state` that differs from the authorization request.",
            html=True,
        ),
        "401": _protocol_error("`access_denied`: no signed-in browser session.", html=True),
        "403": _protocol_error(
            "`invalid_request`: CSRF token (`_token`) missing or wrong.", html=True
        ),
        "413": TOO_LARGE_PAGE,
        **_common_errors(),
        "503": _protocol_error(
            "`temporarily_unavailable`: the answer could not be recorded as used.", html=True
        ),
    }


CONSENT_PAGE_EXAMPLE = (
    "<!DOCTYPE html><html><head><title>Connect the Storefront CLI</title></head><body>"
    "<h1>Connect the Storefront CLI to your account?</h1>"
    '<form method="post"><input type="hidden" name="auth_token" value="…">'
    '<button type="submit">Approve</button>'
    '<button type="submit" name="_method" value="DELETE">Refuse</button></form>'
    "</body></html>"
)


def _paths() -> dict:
    invalid_client = _protocol_error(
        "`invalid_client`: unknown client id or wrong Basic credential.",
        headers={
            "WWW-Authenticate": _header({"type": "string"}, 'Bearer error="invalid_client"'),
            "Cache-Control": NO_STORE,
        },
    )
    client_security = [{}, {"clientBasic": []}]
    browser = [{"browserSession": []}]
    cli = settings.CLI_CLIENT_ID
    return {
        "/.well-known/oauth-authorization-server": {
            "get": {
                "operationId": "oauth_authorization_server_metadata",
                "summary": "Authorization server metadata (RFC 8414)",
                "description": "Where the CLI finds the authorization, token and revocation "
                "endpoints, and what they support (S256 PKCE only, public client, no secret).",
                "tags": [TAG],
                "security": [{}],
                "responses": {
                    "200": _json(
                        _ref("AuthorizationServerMetadata"),
                        "The discovery document.",
                        {"Cache-Control": _header({"type": "string"}, "Cacheable for an hour.")},
                        _examples(discovery_document=discovery_document(EXAMPLE_BASE_URL)),
                    ),
                    **_common_errors(),
                },
            }
        },
        "/oauth/authorize": {
            "get": {
                "operationId": "oauth_authorize",
                "summary": "Consent page of the authorization request (RFC 6749 §4.1.1)",
                "description": "Opened by the CLI in the user's browser. A signed-in browser "
                "gets the consent page; an anonymous one is sent to sign in first. Only the "
                "official CLI's client id, a loopback `/callback` redirect URI and S256 PKCE "
                "are accepted.",
                "tags": [TAG],
                "security": [{"browserSession": []}, {}],
                "parameters": _authorize_query_parameters(),
                "responses": {
                    "200": {
                        "description": "The consent page, for a signed-in browser.",
                        "content": {
                            "text/html": {
                                "schema": {"type": "string"},
                                "examples": _examples(consent_page=CONSENT_PAGE_EXAMPLE),
                            }
                        },
                        "headers": {
                            "Content-Security-Policy": _header({"type": "string"}, "No script."),
                            "X-Frame-Options": _header({"type": "string", "enum": ["DENY"]}, ""),
                            "Referrer-Policy": _header(
                                {"type": "string", "enum": ["same-origin"]}, ""
                            ),
                            "Cache-Control": NO_STORE,
                        },
                    },
                    "302": {
                        "description": "To the sign-in page (anonymous browser, then back "
                        "here), or to the callback with `error`, `error_description`, "
                        "`state` and `iss` (RFC 9207) when a rule after client and redirect "
                        "URI fails (RFC 6749 §4.1.2.1).",
                        "headers": {"Location": LOCATION},
                    },
                    "303": {
                        "description": "To the callback with `error`, `state` and `iss`, for an "
                        "error django-oauth-toolkit finds after our checks (e.g. an empty "
                        "scope: `invalid_scope`).",
                        "headers": {"Location": LOCATION, "Cache-Control": NO_STORE},
                    },
                    "400": _protocol_error(
                        "Not redirected (RFC 6749 §4.1.2.1): `invalid_request` (client_id or "
                        "redirect_uri missing, repeated or not a loopback callback) or "
                        "`invalid_client`.",
                        html=True,
                    ),
                    **_common_errors(),
                },
            },
            "post": _form_operation(
                "oauth_authorize_approve",
                "Approve the consent page (or refuse with `_method=DELETE`)",
                "The consent page's Approve button: the browser is sent back to the CLI's "
                "loopback callback with a single-use code, `state` and `iss`.",
                _ref("ConsentApprovalForm"),
                browser,
                _authorize_answer_responses(),
                _examples(
                    approve={
                        "auth_token": EXAMPLE_AUTH_TOKEN,
                        "client_id": cli,
                        "state": EXAMPLE_STATE,
                        "_token": EXAMPLE_CSRF_TOKEN,
                    }
                ),
            ),
            "delete": _form_operation(
                "oauth_authorize_refuse",
                "Refuse the consent page",
                "The consent page's Refuse button: the browser is sent back to the CLI's "
                "callback with `error=access_denied`, `state` and `iss`; nothing is granted.",
                _ref("ConsentRefusalForm"),
                browser,
                _authorize_answer_responses(),
                _examples(refuse={"auth_token": EXAMPLE_AUTH_TOKEN, "_token": EXAMPLE_CSRF_TOKEN}),
            ),
        },
        "/oauth/token": {
            "post": _form_operation(
                "oauth_token",
                "Exchange a code or rotate a refresh token",
                "`authorization_code` with the PKCE verifier, or `refresh_token`: each answer "
                "is a new access and refresh token pair, and a refresh token works once "
                "(using one twice revokes its whole family).",
                {"oneOf": [_ref("AuthorizationCodeTokenRequest"), _ref("RefreshTokenRequest")]},
                client_security,
                {
                    "200": _json(
                        _ref("TokenResponse"),
                        "A new token pair.",
                        {"Cache-Control": NO_STORE, "Pragma": NO_CACHE_PRAGMA},
                        _examples(
                            token_pair={
                                "access_token": EXAMPLE_ACCESS_TOKEN,
                                "token_type": "Bearer",
                                "expires_in": settings.OAUTH2_PROVIDER[
                                    "ACCESS_TOKEN_EXPIRE_SECONDS"
                                ],
                                "scope": settings.OAUTH_SCOPE_ADMIN,
                                "refresh_token": EXAMPLE_REFRESH_TOKEN,
                            }
                        ),
                    ),
                    "400": _malformed_or_protocol_error(
                        "`invalid_grant` (unknown, used or expired code or refresh token; "
                        "verifier or redirect_uri mismatch), `invalid_request`, "
                        "`unsupported_grant_type`, `unauthorized_client`."
                    ),
                    "401": invalid_client,
                    "413": TOO_LARGE,
                    **_common_errors(),
                },
                _examples(
                    authorization_code={
                        "grant_type": "authorization_code",
                        "client_id": cli,
                        "code": EXAMPLE_CODE,
                        "redirect_uri": EXAMPLE_REDIRECT_URI,
                        "code_verifier": EXAMPLE_CODE_VERIFIER,
                    },
                    refresh_token={
                        "grant_type": "refresh_token",
                        "client_id": cli,
                        "refresh_token": EXAMPLE_REFRESH_TOKEN,
                    },
                ),
            )
        },
        "/oauth/revoke": {
            "post": _form_operation(
                "oauth_revoke",
                "Revoke a token: disconnects the CLI installation (RFC 7009)",
                "Sent by the CLI when it disconnects. A live access or refresh token of the CLI "
                "disconnects its installation; an unknown, rotated, revoked or expired one "
                "changes nothing (another machine's connection stays). Both answer 200.",
                _ref("RevocationRequest"),
                client_security,
                {
                    "200": _json(
                        {"type": "array", "items": {}, "maxItems": 0},
                        "Revoked, or unknown or already invalid (RFC 7009 §2.2): `[]`.",
                        {"Cache-Control": NO_STORE},
                        _examples(revoked=[]),
                    ),
                    "400": _malformed_or_protocol_error("`invalid_request`: no `token`."),
                    "401": invalid_client,
                    "413": TOO_LARGE,
                    **_common_errors(),
                },
                _examples(
                    refresh_token={
                        "client_id": cli,
                        "token": EXAMPLE_REFRESH_TOKEN,
                        "token_type_hint": "refresh_token",
                    }
                ),
            )
        },
    }


def _security_schemes() -> dict:
    return {
        "browserSession": {
            "type": "apiKey",
            "in": "cookie",
            "name": settings.SESSION_COOKIE_NAME,
            "description": "The browser's sign-in session (with the CSRF cookie and `_token`).",
        },
        "clientBasic": {
            "type": "http",
            "scheme": "basic",
            "description": "Legacy: `client_id:` (empty secret). The CLI sends `client_id` "
            "in the form instead.",
        },
    }


def oauth_protocol_paths(result, generator, request, public, **kwargs):
    """POSTPROCESSING_HOOKS entry: adds the protocol endpoints, their components and tag."""
    components = result.setdefault("components", {})
    components.setdefault("schemas", {}).update(_schemas())
    components.setdefault("securitySchemes", {}).update(_security_schemes())
    result.setdefault("paths", {}).update(_paths())
    return result
