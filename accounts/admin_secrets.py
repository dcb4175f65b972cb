"""Secrets in the admin: the page that shows a new secret once (a new API key, a new webhook
signing secret), and no changelist filter on a secret field.

Rendered as the answer to the POST that made the secret, with `Cache-Control: no-store`: not a
message (the `messages` cookie is signed, not encrypted), nor a redirect, nor a cached page.
"""

from django.contrib.admin import ModelAdmin
from django.db.models.constants import LOOKUP_SEP
from django.template.response import TemplateResponse
from django.utils.cache import add_never_cache_headers


def secret_shown_once_response(
    model_admin: ModelAdmin,
    request,
    *,
    title: str,
    secrets: list[tuple[str, str]],
    continue_url: str,
) -> TemplateResponse:
    """`secrets`: (what it is for, the secret) pairs."""
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": title,
        "secrets": secrets,
        "continue_url": continue_url,
    }
    response = TemplateResponse(request, "admin/secret_shown_once.html", context)
    add_never_cache_headers(response)  # max-age=0, no-cache, no-store, must-revalidate, private
    return response


class SecretLookupsRefused:
    """ModelAdmin mixin: no query-string filter on a field of `secret_fields`.

    Django's changelist accepts a lookup on any of the model's own fields in its query string
    (`?secret__startswith=whsec_a`): on a secret one, whether the list is empty tells whether
    the secret starts with the guess, so it can be read a character at a time without ever
    being shown. Such a request answers 400 (DisallowedModelAdminLookup).
    """

    secret_fields: tuple[str, ...] = ()

    def lookup_allowed(self, lookup, value, request):
        if lookup.split(LOOKUP_SEP, 1)[0] in self.secret_fields:
            return False
        return super().lookup_allowed(lookup, value, request)
