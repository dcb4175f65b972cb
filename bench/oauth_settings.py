"""Production settings with the OAuth benchmark's URLconf (the app's URLs plus a stock DOT
token endpoint to compare against); never deployed."""

from config.settings.production import *  # noqa: F403

ROOT_URLCONF = "bench.oauth_urls"
