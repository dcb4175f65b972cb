"""The app's URLs plus the peer for bench/oauth_token.py; never deployed.

`/bench/dot-token` is django-oauth-toolkit's own TokenView with DOT's stock OAuth2Validator
(not ours): what a typical Django team mounts. It shares the project's OAUTH2_PROVIDER
settings (rotation, refresh-token reuse protection, grace period 0, hashed tokens at rest),
the middleware and the database; it serves a second, public Application created by the bench.

`/bench/compare-token/<n>` (only with `oauth_token.py --compare DIR`): our token view with
the validator of another checkout (DIR's `oauth_cli/validators.py`, loaded in this process),
so a change of the validator is measured before and after in one run. DIR's validator must
import what this checkout has (the same models, selectors and services).
"""

import importlib.util
import os
from pathlib import Path

from django.urls import include, path
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.views import TokenView

from oauth_cli.views import CliTokenView


class StockTokenView(TokenView):
    # A class attribute: DOT reads it in a classmethod, so as_view(validator_class=...) would
    # not reach it.
    validator_class = OAuth2Validator


def compared_token_views() -> list:
    directories = [d for d in os.environ.get("BENCH_COMPARE_DIRS", "").split(os.pathsep) if d]
    patterns = []
    for index, directory in enumerate(directories):
        source = Path(directory) / "oauth_cli" / "validators.py"
        spec = importlib.util.spec_from_file_location(f"bench_compared_validators_{index}", source)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        view = type(
            f"ComparedTokenView{index}",
            (CliTokenView,),
            {"validator_class": module.CliOAuth2Validator},
        )
        patterns.append(path(f"bench/compare-token/{index}", view.as_view()))
    return patterns


urlpatterns = [
    path("bench/dot-token", StockTokenView.as_view()),
    *compared_token_views(),
    path("", include("config.urls")),
]
