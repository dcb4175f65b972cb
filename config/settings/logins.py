"""Password sign-in limits (the CLI's /accounts/login/ and the admin's), imported by base.py.

django-axes counts failures in the shared cache (Redis outside `make run`), separately per client
address (config.api.client_address, the key of every per-address limit) and per submitted
username, existing or not, so a lockout says nothing about which usernames exist.
"""

from datetime import timedelta

from config.settings.env import env

AUTHENTICATION_BACKENDS = [
    # First: refuses a locked-out sign-in before any password is checked, correct ones included.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

LOGIN_FAILURE_LIMIT = env.count("LOGIN_FAILURE_LIMIT", default=10, minimum=1)
LOGIN_LOCKOUT_MINUTES = env.count("LOGIN_LOCKOUT_MINUTES", default=15, minimum=1)

AXES_HANDLER = "axes.handlers.cache.AxesCacheHandler"
AXES_CACHE = "default"
AXES_FAILURE_LIMIT = LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=LOGIN_LOCKOUT_MINUTES)
# Two independent counters: one address guessing many usernames, many addresses guessing one.
AXES_LOCKOUT_PARAMETERS = ["ip_address", "username"]
AXES_CLIENT_IP_CALLABLE = "config.api.client_address.client_address"
AXES_USERNAME_CALLABLE = "oauth_cli.login_limits.username_key"
AXES_LOCKOUT_CALLABLE = "oauth_cli.views.locked_out_response"
# A sign-in that succeeds keeps the counters: otherwise an attacker with one real account
# could reset the counter of their address between rounds of guesses at other accounts.
AXES_RESET_ON_SUCCESS = False
# A lockout ends LOGIN_LOCKOUT_MINUTES after the failure that caused it, as the page says;
# guesses during it are refused without being counted.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
# The cache handler writes no AccessAttempt rows: their admin pages would always be empty.
AXES_ENABLE_ADMIN = False
AXES_VERBOSE = False
