"""Production settings with the benchmark's URLconf (the app's URLs plus two reference views)."""

from config.settings.production import *  # noqa: F403

ROOT_URLCONF = "bench.coupons_urls"
