from django.core.exceptions import ImproperlyConfigured

from config.settings.base import *  # noqa: F403
from config.settings.base import INSECURE_DEFAULT_SECRET_KEY, SECRET_KEY, env_bool

DEBUG = False
if SECRET_KEY == INSECURE_DEFAULT_SECRET_KEY or len(SECRET_KEY) < 32:
    raise ImproperlyConfigured(
        "Production needs SECRET_KEY set to a random value of at least 32 characters."
    )

SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
