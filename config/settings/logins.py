"""Per-address limits' client key, the password sign-in limits (the CLI's /accounts/login/
and the admin's; oauth_cli/login_limits.py) and the API's failed-authentication limit,
imported by base.py. django-axes counts sign-in failures in the shared cache per client
address (IPv4 address or IPv6 network) and per submitted username, existing or not.
"""

from datetime import timedelta

from django.core.exceptions import ImproperlyConfigured

from config.settings.env import env

# The IPv6 network one client is counted as (a /64 is what a home or a server is given; 56 or
# 48 are stricter, for sites whose attackers hold whole delegations). 32 to 128 bits.
CLIENT_IPV6_PREFIX_LENGTH = env.count("CLIENT_IPV6_PREFIX_LENGTH", default=64, minimum=32)
if CLIENT_IPV6_PREFIX_LENGTH > 128:
    raise ImproperlyConfigured(
        f"CLIENT_IPV6_PREFIX_LENGTH={CLIENT_IPV6_PREFIX_LENGTH} is not valid: "
        "expected a prefix length from 32 to 128."
    )

# Failed bearer authentications (a bogus API key or token, a malformed header) per client
# address and minute; past it, 429 before any credential lookup (accounts/authentication.py).
API_AUTH_FAILURES_PER_MINUTE = env.count("API_AUTH_FAILURES_PER_MINUTE", default=30, minimum=1)

AUTHENTICATION_BACKENDS = [
    # First: refuses a locked-out sign-in before any password is checked, correct ones included.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

LOGIN_FAILURE_LIMIT = env.count("LOGIN_FAILURE_LIMIT", default=10, minimum=1)
LOGIN_LOCKOUT_MINUTES = env.count("LOGIN_LOCKOUT_MINUTES", default=15, minimum=1)
# How long a browser (and an address) stays known for an account after its last sign-in there.
LOGIN_KNOWN_BROWSER_DAYS = env.count("LOGIN_KNOWN_BROWSER_DAYS", default=90, minimum=1)

AXES_HANDLER = "axes.handlers.cache.AxesCacheHandler"
AXES_CACHE = "default"
AXES_FAILURE_LIMIT = LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=LOGIN_LOCKOUT_MINUTES)
# Which counters a sign-in is counted in and refused by: per address and per username for an
# unknown client, per username-from-known-browsers for a known browser, per address only from
# a known address (see login_limits.py).
AXES_LOCKOUT_PARAMETERS = "oauth_cli.login_limits.lockout_parameters"
AXES_CLIENT_IP_CALLABLE = "core.api.client_address.client_address_key"
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
