"""The relaxations `make run` turns on, under production settings (settings.DEVELOPMENT_OPT_INS).

`manage.py check --deploy` fails on them (errors, not warnings nobody reads). Production still
runs with them (our own acceptance runs need them), but never silently: every process names each
in a WARNING at start (`development_opt_ins_warn`) and /status lists them.
"""

import logging

from django.conf import settings
from django.core import checks

logger = logging.getLogger("storefront.settings")


def development_opt_ins_warn() -> None:
    for name in settings.DEVELOPMENT_OPT_INS:
        logger.warning(
            "development opt-in %s is on under production settings: unset it unless this is "
            "a test deployment",
            name,
        )


@checks.register(checks.Tags.security, deploy=True)
def no_private_webhook_channels(app_configs, **kwargs):
    if settings.WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS:
        return [
            checks.Error(
                "WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS is on: any store can make the workers send "
                "requests to plain-http, loopback and private-network addresses (SSRF).",
                hint="Unset WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS (a `make run` opt-in).",
                id="storefront.E001",
            )
        ]
    return []


@checks.register(checks.Tags.security, deploy=True)
def cookies_only_over_https(app_configs, **kwargs):
    if not (settings.SESSION_COOKIE_SECURE and settings.CSRF_COOKIE_SECURE):
        return [
            checks.Error(
                "SECURE_COOKIES is off: the session and CSRF cookies (admin and CLI sign-in) "
                "are also sent over plain HTTP.",
                hint="Unset SECURE_COOKIES (a `make run` opt-in for its plain-HTTP server).",
                id="storefront.E002",
            )
        ]
    return []
