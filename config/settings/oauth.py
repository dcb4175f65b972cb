"""Settings of the oauth area, imported by base.py; read from the environment.

django-oauth-toolkit's defaults are not ours (docs/design.md "OAuth"): PKCE S256 only, rotation with
reuse protection, 60-minute access tokens, 10-minute codes, hashed tokens at rest.
"""

from celery.schedules import crontab

from config.settings.env import env

OAUTH_ACCESS_TOKEN_SECONDS = 3600
OAUTH_CODE_SECONDS = 600
# Absolute lifetime of a token family (one code exchange and all its rotations).
OAUTH_TOKEN_FAMILY_SECONDS = 90 * 24 * 3600
# Per client IP, per minute, on the protocol endpoints (discovery, authorize, token, revoke).
OAUTH_RATE_LIMIT_PER_MINUTE = env.count("OAUTH_RATE_LIMIT_PER_MINUTE", default=60, minimum=1)
# How long the consent form (its auth_token in the session) stays valid.
OAUTH_CONSENT_SECONDS = 600
OAUTH_SCOPE_ADMIN = "admin"
# DOT's default models, named so migrations can resolve the swappable Application reference.
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"

OAUTH2_PROVIDER = {
    "OAUTH2_VALIDATOR_CLASS": "oauth_cli.validators.CliOAuth2Validator",
    "SCOPES": {
        OAUTH_SCOPE_ADMIN: "Act as you on every store you can access now or later, "
        "within your membership and role."
    },
    "DEFAULT_SCOPES": [OAUTH_SCOPE_ADMIN],
    "PKCE_REQUIRED": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    # RFC 9207: `iss` on the authorization response (OIDC_ISS_ENDPOINT, set from BASE_URL in
    # base.py, makes it the discovery document's issuer).
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "ACCESS_TOKEN_EXPIRE_SECONDS": OAUTH_ACCESS_TOKEN_SECONDS,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": OAUTH_CODE_SECONDS,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": 0,
    # Idle expiry (DOT slides it with the access token); the 90-day absolute cap is ours.
    "REFRESH_TOKEN_EXPIRE_SECONDS": OAUTH_TOKEN_FAMILY_SECONDS,
    "REQUEST_APPROVAL_PROMPT": "force",
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http"],
    "ALLOW_URI_WILDCARDS": False,
    "ALLOW_LOCALHOST_LOOPBACK": False,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none"],
}

OAUTH_BEAT_SCHEDULE: dict = {
    "oauth-prune": {
        "task": "oauth_cli.prune",
        "schedule": crontab(minute=7),
    },
}
