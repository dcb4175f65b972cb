"""Production settings with the benchmark's URLconf (the app's URLs plus reference views).

`rest_framework.authtoken` is installed here only, for the stock DRF peer of the coupon list
(bench/coupons_urls.py); the bench's `migrate` creates its table in the throwaway database.
BENCH_DATABASE_OPTIONS (JSON) adds to the database's OPTIONS, to time a driver option before
adopting it (bench/coupons_list_cpu.py `--options`).
"""

import json
import os

from config.settings.production import *  # noqa: F403
from config.settings.production import DATABASES, INSTALLED_APPS

DATABASES["default"]["OPTIONS"].update(json.loads(os.environ.get("BENCH_DATABASE_OPTIONS", "{}")))

ROOT_URLCONF = "bench.coupons_urls"
INSTALLED_APPS = [*INSTALLED_APPS, "rest_framework.authtoken"]
