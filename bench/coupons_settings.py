"""Production settings with the benchmark's URLconf (the app's URLs plus reference views).

`rest_framework.authtoken` is installed here only, for the stock DRF peer of the coupon list
(bench/coupons_urls.py); the bench's `migrate` creates its table in the throwaway database.
"""

from config.settings.production import *  # noqa: F403
from config.settings.production import INSTALLED_APPS

ROOT_URLCONF = "bench.coupons_urls"
INSTALLED_APPS = [*INSTALLED_APPS, "rest_framework.authtoken"]
