"""The app's URLs plus the peer for bench/oauth_token.py; never deployed.

`/bench/dot-token` is django-oauth-toolkit's own TokenView with DOT's stock OAuth2Validator
(not ours): what a typical Django team mounts. It shares the project's OAUTH2_PROVIDER
settings (rotation, refresh-token reuse protection, grace period 0, hashed tokens at rest),
the middleware and the database; it serves a second, public Application created by the bench.
"""

from django.urls import include, path
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.views import TokenView


class StockTokenView(TokenView):
    # A class attribute: DOT reads it in a classmethod, so as_view(validator_class=...) would
    # not reach it.
    validator_class = OAuth2Validator


urlpatterns = [
    path("bench/dot-token", StockTokenView.as_view()),
    path("", include("config.urls")),
]
