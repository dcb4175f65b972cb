from config.settings.base import *  # noqa: F403
from config.settings.base import VAR_DIR, env_bool

DEBUG = env_bool("DEBUG", True)
WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS = env_bool("WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS", True)
VAR_DIR.mkdir(parents=True, exist_ok=True)
